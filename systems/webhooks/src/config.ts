/**
 * The webhooks service's settings (environment variables, validated at start: a bad value
 * fails the start with one message naming every variable at fault, ARCHITECTURE rule 5).
 * Beyond the per-field checks of kit's loadConfig, `loadWebhooksConfig` checks what only
 * makes sense across fields: the lease must outlast the HTTP deadline (svix PR #2181), the
 * payload must outlive the retry window (WH-22), and every CIDR must parse. Those run once
 * every field is valid on its own (they need the values), so a start with both kinds of
 * mistakes reports the per-field ones first.
 *
 * @example
 * const config = loadWebhooksConfig({ PORT: "0", WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32" });
 * config.urlPolicy.allow.length; // 1
 * config.leaseMs;                // 45000
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { MAX_POLICY_RANGES } from "@casebook/kit/address-policy";
import { callerApiKeysPattern } from "@casebook/kit/caller-api-keys";
import { ConfigError, type ConfigOf, type ConfigProblem, field, loadConfig } from "@casebook/kit/config";
import { parseCidr } from "@casebook/kit/ip-address";
import { createUrlPolicy, type UrlPolicy } from "./domain/url-policy.ts";
import { LEASE_HEADROOM_MS } from "./store/delivery-claims.ts";
import { DEFAULT_MAX_PAYLOAD_BYTES } from "./store/event-repository.ts";

/**
 * Every webhooks statement is a short OLTP one (claims, CAS writes, bounded batches). The
 * pool gives up on a silent link 5 s after the statement timeout (infra's pg-database.ts):
 * 5 + 5 s stays well inside the HTTP handler timeout (30 s), so a request on a dead link
 * answers 503 SQL_UNAVAILABLE rather than HANDLER_TIMEOUT; the pool's own 30 s default would not.
 */
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 5_000;
/** WEBHOOKS_BOOTSTRAP_TENANT value that turns the demo tenant off. */
export const BOOTSTRAP_OFF = "off";
/** The demo tenant `npx casebook run webhooks` creates on the embedded database. */
export const DEFAULT_BOOTSTRAP_TENANT = "demo";
/** Largest event payload an operator may allow: a webhook body, not a file transfer. */
export const MAX_PAYLOAD_BYTES_LIMIT = 1_048_576;
/** WH-02: the retry window is at most 24 h. */
export const MAX_RETENTION_HOURS = 24;
/** Payloads may be kept longer than the retry window (replays), at most a week. */
export const MAX_PAYLOAD_RETENTION_HOURS = 168;

/**
 * What WEBHOOKS_ALLOW_PRIVATE_NETWORKS opens: loopback, RFC 1918, carrier-grade NAT and
 * IPv6 unique-local space. Link-local (169.254.0.0/16, fe80::/10) stays closed whatever
 * this says: it holds the cloud metadata service, the classic SSRF prize; an operator who
 * really means it lists the range in WEBHOOKS_ALLOW_CIDRS.
 */
export const PRIVATE_NETWORK_CIDRS: readonly string[] = Object.freeze([
  "127.0.0.0/8",
  "::1/128",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
  "fc00::/7",
]);

export const configSchema = {
  ...listenFields({ port: 8113 }),
  ...databaseFields({
    system: "webhooks",
    envPrefix: "WEBHOOKS_DB",
    fields: ["schema", "connectTimeoutMs", "statementTimeoutMs"],
    timeouts: "duration-ms",
    statementTimeoutMsDefault: DEFAULT_DB_STATEMENT_TIMEOUT_MS,
    descriptions: {
      connectTimeoutMs:
        "Bound on opening a PostgreSQL connection, and on waiting for a free one from the pool",
      statementTimeoutMs:
        "PostgreSQL statement_timeout; a silent link is given up 5 s after it, so a request on a dead link answers 503 SQL_UNAVAILABLE",
    },
  }),
  adminToken: field.string({
    env: "WEBHOOKS_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description: "Bearer token of /v1/admin/* (tenants and their API keys); unset = no admin API",
  }),
  bootstrapTenant: field.string({
    env: "WEBHOOKS_BOOTSTRAP_TENANT",
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    description: `Tenant created with a printed API key on first start; "${BOOTSTRAP_OFF}" = none; unset = "${DEFAULT_BOOTSTRAP_TENANT}" on PGlite without an admin token, none otherwise`,
  }),
  callerApiKeys: field.string({
    env: "WEBHOOKS_CALLER_API_KEYS",
    secret: true,
    pattern: callerApiKeysPattern("whk"),
    description:
      "Keys granted to the systems that publish to webhooks, `caller=whk_…,…` (casebook up mints one per caller): each registered at start for a tenant named after its caller, created if absent",
  }),
  retentionHours: field.int({
    env: "WEBHOOKS_RETENTION_HOURS",
    default: 24,
    min: 1,
    max: MAX_RETENTION_HOURS,
    description: "Retry window of new tenants' deliveries (WH-02: at most 24 h); past it a delivery expires",
  }),
  payloadRetentionHours: field.int({
    env: "WEBHOOKS_PAYLOAD_RETENTION_HOURS",
    min: 1,
    max: MAX_PAYLOAD_RETENTION_HOURS,
    description:
      "How long new tenants' event payloads are kept (WH-22; >= the retry window); unset = the retry window",
  }),
  maxPayloadBytes: field.int({
    env: "WEBHOOKS_MAX_PAYLOAD_BYTES",
    default: DEFAULT_MAX_PAYLOAD_BYTES,
    min: 2,
    max: MAX_PAYLOAD_BYTES_LIMIT,
    description: "Largest event payload accepted by POST /v1/events, in bytes of its JSON text",
  }),
  httpDeadlineMs: field.durationMs({
    env: "WEBHOOKS_HTTP_DEADLINE_MS",
    default: 15_000,
    min: 100,
    max: 120_000,
    description: "Whole-attempt deadline of one webhook POST (connect + headers + body)",
  }),
  leaseMs: field.durationMs({
    env: "WEBHOOKS_LEASE_MS",
    default: 45_000,
    min: 1_000,
    max: 600_000,
    description: `A worker's hold on a claimed delivery; must exceed the HTTP deadline by ${LEASE_HEADROOM_MS} ms`,
  }),
  workers: field.bool({
    env: "WEBHOOKS_WORKERS",
    default: true,
    description: "Run the relay, dispatcher, delivery worker and sweeper in this process (off = API only)",
  }),
  relays: field.int({
    env: "WEBHOOKS_RELAYS",
    default: 4,
    min: 1,
    max: 32,
    description: "Outbox relays in this process (each publishes one event at a time)",
  }),
  workerConcurrency: field.int({
    env: "WEBHOOKS_WORKER_CONCURRENCY",
    default: 64,
    min: 1,
    max: 1_000,
    description: "Webhook POSTs in flight at once in this process",
  }),
  pollIntervalMs: field.durationMs({
    env: "WEBHOOKS_POLL_INTERVAL_MS",
    default: 200,
    min: 10,
    max: 60_000,
    description: "How often idle workers (relay, delivery worker) look for due work",
  }),
  sweepIntervalMs: field.durationMs({
    env: "WEBHOOKS_SWEEP_INTERVAL_MS",
    default: 60_000,
    min: 100,
    max: 3_600_000,
    description: "Pause between retention sweeps (payload deletion, deadline expiry, attempt roll-up)",
  }),
  allowHttp: field.bool({
    env: "WEBHOOKS_ALLOW_HTTP",
    default: false,
    description: "Accept plain http:// endpoint URLs (payloads and signatures travel in clear)",
  }),
  allowPrivateNetworks: field.bool({
    env: "WEBHOOKS_ALLOW_PRIVATE_NETWORKS",
    default: false,
    description:
      "Let endpoints be loopback/private/ULA addresses (never link-local: see WEBHOOKS_ALLOW_CIDRS)",
  }),
  allowCidrs: field.string({
    env: "WEBHOOKS_ALLOW_CIDRS",
    maxLength: 16_384,
    description: "Comma-separated CIDRs endpoints may resolve to although not public (127.0.0.1/32)",
  }),
  denyCidrs: field.string({
    env: "WEBHOOKS_DENY_CIDRS",
    maxLength: 16_384,
    description: "Comma-separated CIDRs never called, even public ones (your own ranges)",
  }),
  ...logLevelField(),
};

export type RawWebhooksConfig = ConfigOf<typeof configSchema>;

export interface WebhooksConfig extends RawWebhooksConfig {
  /** Payload retention of new tenants, hours (defaults to the retry window). */
  readonly payloadRetentionHoursResolved: number;
  /** The SSRF policy from the allow/deny settings. */
  readonly urlPolicy: UrlPolicy;
}

function problem(env: string, value: string | undefined, expected: string, message: string): ConfigProblem {
  return { setting: env, env, source: "env", value, expected, message };
}

/** The CIDRs of a comma-separated list; each malformed one is a problem naming `env`. */
function cidrList(
  env: string,
  text: string | undefined,
  maxRanges: number,
  problems: ConfigProblem[],
): string[] {
  const items = (text ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  for (const item of items) {
    try {
      parseCidr(item);
    } catch {
      problems.push(problem(env, item, "CIDRs like 127.0.0.1/32, ::1/128", `${env}: ${item} is not a CIDR`));
    }
  }
  if (items.length > maxRanges) {
    problems.push(problem(env, undefined, `at most ${maxRanges} ranges`, `${env}: more than ${maxRanges}`));
  }
  return items;
}

function crossFieldProblems(config: RawWebhooksConfig, payloadHours: number): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (config.leaseMs < config.httpDeadlineMs + LEASE_HEADROOM_MS) {
    const expected = `>= WEBHOOKS_HTTP_DEADLINE_MS + ${LEASE_HEADROOM_MS} ms`;
    problems.push(
      problem(
        "WEBHOOKS_LEASE_MS",
        String(config.leaseMs),
        expected,
        `WEBHOOKS_LEASE_MS=${config.leaseMs} must be ${expected} (${config.httpDeadlineMs + LEASE_HEADROOM_MS}): a shorter lease lets a second worker send while the first still waits`,
      ),
    );
  }
  if (payloadHours < config.retentionHours) {
    problems.push(
      problem(
        "WEBHOOKS_PAYLOAD_RETENTION_HOURS",
        String(payloadHours),
        ">= WEBHOOKS_RETENTION_HOURS",
        `WEBHOOKS_PAYLOAD_RETENTION_HOURS=${payloadHours} must be >= WEBHOOKS_RETENTION_HOURS=${config.retentionHours}: a delivery cannot outlive the body it sends`,
      ),
    );
  }
  return problems;
}

/**
 * Loads and checks the configuration; throws ONE ConfigError listing every problem.
 *
 * @example
 * const config = loadWebhooksConfig(process.env);
 */
export function loadWebhooksConfig(env: Readonly<Record<string, string | undefined>>): WebhooksConfig {
  const config = loadConfig(configSchema, { env });
  const payloadHours = config.payloadRetentionHours ?? config.retentionHours;
  const problems = crossFieldProblems(config, payloadHours);
  // The private ranges share the allow list's bound with the operator's own.
  const allowMax = MAX_POLICY_RANGES - PRIVATE_NETWORK_CIDRS.length;
  const allow = cidrList("WEBHOOKS_ALLOW_CIDRS", config.allowCidrs, allowMax, problems);
  const deny = cidrList("WEBHOOKS_DENY_CIDRS", config.denyCidrs, MAX_POLICY_RANGES, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  const urlPolicy = createUrlPolicy({
    allowHttp: config.allowHttp,
    allow: [...(config.allowPrivateNetworks ? PRIVATE_NETWORK_CIDRS : []), ...allow],
    deny,
  });
  return { ...config, payloadRetentionHoursResolved: payloadHours, urlPolicy };
}
