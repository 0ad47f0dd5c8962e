/**
 * The payments settings: environment variables, validated at start — a bad value fails the
 * start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all
 * (WEBHOOKS_URL and WEBHOOKS_API_KEY included: the outbox relay's publisher reads them from
 * here, never from the environment directly).
 *
 * The cross-field checks run after each field is valid on its own. `WEBHOOKS_URL` needs
 * `WEBHOOKS_API_KEY` (the webhooks system takes no event without a tenant's key: every publish
 * would be a 401 the relay retries forever). And with `DATABASE_URL` (PostgreSQL, shared by every replica) and no `ACQUIRER_URL`,
 * the start is refused. Each process would start its own in-process acquirer simulator, whose
 * authorizations live in that process's memory: a payment authorized through replica A and
 * captured through replica B would be captured at a simulator that never saw it, and fail. The
 * embedded PGlite database is held by one process only, so there the in-process simulator is safe.
 *
 * Why refuse rather than share one simulator between replicas: a shared in-process simulator
 * would live and die with whichever replica hosts it (a SIGKILLed host loses every replica's
 * authorizations), and electing a host is a mechanism the real deployment never needs — there
 * the acquirer is outside. Starting the simulator as its own service is one command.
 *
 * @example
 * const config = loadPaymentsConfig({ PORT: "0", CASEBOOK_DATA: dir });
 * const problems = crossFieldProblems({ databaseUrl: "postgres://…", acquirerUrl: undefined });
 * problems[0]?.message; // "ACQUIRER_URL is required when DATABASE_URL is set: …"
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { callerApiKeysPattern } from "@casebook/kit/caller-api-keys";
import { ConfigError, type ConfigOf, type ConfigProblem, field, loadConfig } from "@casebook/kit/config";
import { webhooksConfigProblems } from "@casebook/webhooks/client";
import { DEFAULT_SAGA_LEASE_MS } from "./workers/saga-orchestrator.ts";

/** PAYMENTS_BOOTSTRAP_MERCHANT value that turns the demo merchant off. */
export const BOOTSTRAP_OFF = "off";
/** The demo merchant `npm start` creates on the embedded database. */
export const DEFAULT_BOOTSTRAP_MERCHANT = "demo";

export const configSchema = {
  ...listenFields({ port: 8104 }),
  // 10 s statement timeout + the driver's 5 s grace stays inside the 30 s handler timeout, so a
  // silent database answers 503 SQL_UNAVAILABLE; a ledger batch of 100 transfers takes ~1.6 s at p99.
  ...databaseFields({
    system: "payments",
    envPrefix: "PAYMENTS_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs", "connectTimeoutMs", "preparedStatements"],
    maxConnectionsDefault: 10,
    statementTimeoutMsDefault: 10_000,
    preparedStatementsDefault: 256,
  }),
  acquirerUrl: field.url({
    env: "ACQUIRER_URL",
    protocols: ["http:", "https:"],
    description:
      "The card acquirer; unset = start the acquirer simulator in-process on a free port (PGlite only: required with DATABASE_URL)",
  }),
  bootstrapMerchant: field.string({
    env: "PAYMENTS_BOOTSTRAP_MERCHANT",
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    description: `Merchant created with a printed API key on first start; "${BOOTSTRAP_OFF}" = none; unset = "${DEFAULT_BOOTSTRAP_MERCHANT}" on PGlite, none on PostgreSQL`,
  }),
  adminToken: field.string({
    env: "PAYMENTS_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description:
      "Bearer token of /v1/admin/* (merchants and their API keys; `casebook payments new-key` uses it); unset = no admin API",
  }),
  callerApiKeys: field.string({
    env: "PAYMENTS_CALLER_API_KEYS",
    secret: true,
    pattern: callerApiKeysPattern("sk"),
    description:
      "Keys granted to the systems that call payments, `caller=sk_…,…` (casebook up mints one per caller): each registered at start for a merchant named after its caller, created if absent",
  }),
  breakerOpenMode: field.enum(["accept", "fail-fast"], {
    env: "PAYMENTS_BREAKER_OPEN_MODE",
    default: "accept",
    description: "PY-12: while the acquirer's breaker is open, new payments get 202 pending (accept) or 503",
  }),
  inlineDriveMs: field.int({
    env: "PAYMENTS_INLINE_DRIVE_MS",
    default: 2_000,
    min: 0,
    max: 25_000,
    description:
      "How long POST /v1/payments drives the saga before answering 202 pending (< handler timeout)",
  }),
  refundRetryAfterMs: field.int({
    env: "PAYMENTS_REFUND_RETRY_AFTER_MS",
    default: 5_000,
    min: 0,
    max: 86_400_000,
    description:
      "How long a refund left pending (unknown acquirer outcome) waits before the retry worker takes it",
  }),
  acquirerRatePerS: field.int({
    env: "PAYMENTS_ACQUIRER_RATE_PER_S",
    default: 200,
    min: 1,
    max: 1_000_000,
    description:
      "PY-12: acquirer calls per second this instance may make (a token bucket holding half a second of burst)",
  }),
  acquirerFeeBps: field.int({
    env: "PAYMENTS_ACQUIRER_FEE_BPS",
    default: 150,
    min: 0,
    max: 10_000,
    description: "PY-10: the acquirer fee our contract sets on captures, in basis points (150 = 1.5 %)",
  }),
  keyCacheTtlMs: field.durationMs({
    env: "PAYMENTS_KEY_CACHE_TTL_MS",
    default: 5_000,
    min: 0,
    max: 60_000,
    description:
      "How long a verified merchant API key is remembered in this process (saves a database query per request); a key revoked through another process, or in the database, keeps working here up to this long (through this process's admin API: at once); 0 = no cache",
  }),
  claimLeaseMs: field.int({
    env: "PAYMENTS_CLAIM_LEASE_MS",
    default: DEFAULT_SAGA_LEASE_MS,
    min: 1_000,
    max: 60_000,
    description:
      "Lease of a saga's claim and of an Idempotency-Key's claim, renewed every third of it while the work runs: a crashed process's payments are taken over within it",
  }),
  webhooksUrl: field.url({
    env: "WEBHOOKS_URL",
    protocols: ["http:", "https:"],
    description:
      "The webhooks system (its base URL; …/v1/events is accepted too): the outbox relay publishes payment events there; unset = kept in memory (bounded)",
  }),
  webhooksApiKey: field.string({
    env: "WEBHOOKS_API_KEY",
    secret: true,
    description:
      "The webhooks tenant's API key (whk_…) the publisher sends with each event; required with WEBHOOKS_URL",
  }),
  ...logLevelField(),
};

export type PaymentsConfig = ConfigOf<typeof configSchema>;

/** The one line a refused start prints: what to set, and the command that gives it a value. */
export const ACQUIRER_URL_REQUIRED =
  "ACQUIRER_URL is required when DATABASE_URL is set: every replica must call the same acquirer " +
  "(start one with `npx casebook payments acquirer-sim` and set ACQUIRER_URL=http://127.0.0.1:8154)";

export function crossFieldProblems(config: {
  readonly databaseUrl: string | undefined;
  readonly acquirerUrl: string | undefined;
  readonly webhooksUrl?: string | undefined;
  readonly webhooksApiKey?: string | undefined;
}): ConfigProblem[] {
  const problems = webhooksConfigProblems(config);
  if (config.databaseUrl === undefined || config.acquirerUrl !== undefined) return problems;
  return [
    ...problems,
    {
      setting: "acquirerUrl",
      env: "ACQUIRER_URL",
      source: "missing",
      value: undefined,
      expected: "an http(s) URL when DATABASE_URL is set",
      message: ACQUIRER_URL_REQUIRED,
    },
  ];
}

/** The settings, each field checked on its own, then across fields; a ConfigError names every problem. */
export function loadPaymentsConfig(env: NodeJS.ProcessEnv): PaymentsConfig {
  const config = loadConfig(configSchema, { env });
  const problems = crossFieldProblems(config);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
