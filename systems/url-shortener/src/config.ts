/**
 * The settings of url-shortener: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * Where it listens, its log level and its database are infra's presets, as in every service;
 * the default port is the manifest's (`casebook.port` in package.json). Checks across fields
 * (a list's entries) are in `loadSystemConfig`, after the per-field ones.
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.domains; // [{ origin: "http://localhost:8109", host: "localhost:8109" }]
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };
import { DEFAULT_CACHE_MAX_AGE_S, MAX_CACHE_MAX_AGE_S } from "./domain/link-rules.ts";

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...databaseFields({
    system: "url-shortener",
    envPrefix: "URL_SHORTENER_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs"],
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    secret: true,
    description: "Redis for the code counter (INCRBY); unset = the counter row in SQL",
  }),
  domains: field.string({
    env: "URL_SHORTENER_DOMAINS",
    default: `http://localhost:${packageJson.casebook.port}`,
    maxLength: 2_000,
    description:
      "Short domains as origins, comma-separated (http://localhost:8109,https://go.example.com): each has its own codes; the first is the default",
  }),
  defaultCacheMaxAgeS: field.int({
    env: "URL_SHORTENER_CACHE_MAX_AGE_S",
    default: DEFAULT_CACHE_MAX_AGE_S,
    min: 0,
    max: MAX_CACHE_MAX_AGE_S,
    description: "Cache-Control max-age of a redirect whose link does not set one (US-08: 300)",
  }),
  cacheMaxEntries: field.int({
    env: "URL_SHORTENER_CACHE_MAX_ENTRIES",
    default: 100_000,
    min: 0,
    max: 10_000_000,
    description: "In-process LRU of resolved links: most entries (0 = no LRU)",
  }),
  cacheMaxBytes: field.int({
    env: "URL_SHORTENER_CACHE_MAX_BYTES",
    default: 64 * 1_048_576,
    min: 1_024,
    max: 8 * 1_073_741_824,
    description: "In-process LRU of resolved links: most bytes (estimated per entry)",
  }),
  cacheTtlMs: field.durationMs({
    env: "URL_SHORTENER_CACHE_TTL_MS",
    default: 60_000,
    min: 100,
    max: 3_600_000,
    description: "How long the LRU keeps a link: an edit on another replica shows here within this",
  }),
  createRatePerS: field.number({
    env: "URL_SHORTENER_CREATE_RATE_PER_S",
    default: 10,
    min: 0.01,
    max: 100_000,
    description: "Links an API key may create per second, sustained (US-16)",
  }),
  createBurst: field.int({
    env: "URL_SHORTENER_CREATE_BURST",
    default: 100,
    min: 1,
    max: 1_000_000,
    description: "Links an API key may create back to back before the rate applies",
  }),
  blockedDomains: field.string({
    env: "URL_SHORTENER_BLOCKED_DOMAINS",
    default: "",
    maxLength: 100_000,
    description: "Target domains refused at creation, comma-separated (a domain blocks its subdomains)",
  }),
  blockedPatterns: field.string({
    env: "URL_SHORTENER_BLOCKED_PATTERNS",
    default: "",
    maxLength: 100_000,
    description: "Substrings of target URLs refused at creation, comma-separated, case-insensitive",
  }),
  reapIntervalMs: field.durationMs({
    env: "URL_SHORTENER_REAP_INTERVAL_MS",
    default: 60_000,
    min: 100,
    max: 86_400_000,
    description: "How often the reaper deletes expired links",
  }),
  clicks: field.bool({
    env: "URL_SHORTENER_CLICKS",
    default: true,
    description:
      "Click capture: each visit to a bounded buffer, flushed in batches to the day-partitioned log",
  }),
  clickBufferMax: field.int({
    env: "URL_SHORTENER_CLICK_BUFFER_MAX",
    default: 100_000,
    min: 1,
    max: 10_000_000,
    description: "Visits waiting for the flusher at most; past it visits are dropped and counted",
  }),
  clickFlushMaxBatch: field.int({
    env: "URL_SHORTENER_CLICK_FLUSH_MAX_BATCH",
    default: 5_000,
    min: 1,
    max: 100_000,
    description: "Visits per INSERT of the flusher",
  }),
  clickFlushIntervalMs: field.durationMs({
    env: "URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS",
    default: 1_000,
    min: 10,
    max: 600_000,
    description: "Pause of the flusher when the buffer had less than a batch",
  }),
  rollupIntervalMs: field.durationMs({
    env: "URL_SHORTENER_ROLLUP_INTERVAL_MS",
    default: 10_000,
    min: 100,
    max: 3_600_000,
    description: "How often the clicks appended since the last round are added to the hourly/daily rollups",
  }),
  staleIfErrorS: field.int({
    env: "URL_SHORTENER_STALE_IF_ERROR_S",
    default: 86_400,
    min: 0,
    max: 30 * 86_400,
    description:
      "Cache-Control stale-if-error of a redirect: how long an edge may serve it past max-age while the origin fails (US-10); capped by a link's expiry",
  }),
  edgeToken: field.string({
    env: "URL_SHORTENER_EDGE_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description:
      "Shared with the nginx edge (X-Edge-Token): a redirect asked for by the edge is counted from the edge's access log, not here; unset = every visit counted here",
  }),
  edgeAccessLog: field.string({
    env: "URL_SHORTENER_EDGE_ACCESS_LOG",
    minLength: 1,
    maxLength: 4_096,
    description:
      "The edge's JSON access log (src/edge/nginx-edge-config.ts): ingested into the click log, each line once; unset = no ingestion",
  }),
  edgeIngestIntervalMs: field.durationMs({
    env: "URL_SHORTENER_EDGE_INGEST_INTERVAL_MS",
    default: 1_000,
    min: 10,
    max: 600_000,
    description: "Pause of the edge-log ingester when it reached the end of the log",
  }),
  edgePurgeUrl: field.url({
    env: "URL_SHORTENER_EDGE_PURGE_URL",
    protocols: ["http:", "https:"],
    description:
      "The edge's purge endpoint (http://127.0.0.1:8110/_edge/purge): a disabled, edited or deleted link is purged from it at once; unset = the edge keeps it up to its max-age",
  }),
  adminToken: field.string({
    env: "URL_SHORTENER_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description:
      "The operator's bearer token for /v1/admin (workspaces, keys, disabling links); unset = no admin API",
  }),
  ...logLevelField(),
};

export interface ShortDomain {
  /** `https://go.example.com`: where short URLs point. */
  origin: string;
  /** `go.example.com` (with a port when not the scheme's default): the links' `domain`, matched against Host. */
  host: string;
}

export type SystemConfig = Omit<ConfigOf<typeof configSchema>, "domains"> & {
  domains: ShortDomain[];
  blocklist: { domains: string[]; patterns: string[] };
};

function list(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** One problem with URL_SHORTENER_DOMAINS, in the shape loadConfig reports every other. */
function domainsProblem(value: string, expected: string): ConfigError {
  return new ConfigError([
    {
      setting: "domains",
      env: "URL_SHORTENER_DOMAINS",
      source: "env",
      value: JSON.stringify(value),
      expected,
      message: `URL_SHORTENER_DOMAINS=${JSON.stringify(value)}: expected ${expected}`,
    },
  ]);
}

function parseDomains(text: string): ShortDomain[] {
  const expected = "comma-separated origins, http(s)://host[:port] with no path";
  const domains = list(text).map((entry) => {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw domainsProblem(entry, expected);
    }
    if (
      (url.protocol !== "http:" && url.protocol !== "https:") ||
      url.pathname !== "/" ||
      url.search !== ""
    ) {
      throw domainsProblem(entry, expected);
    }
    return { origin: url.origin, host: url.host.toLowerCase() };
  });
  if (domains.length === 0) throw domainsProblem(text, "at least one origin");
  return domains;
}

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const loaded = loadConfig(configSchema, { env });
  return {
    ...loaded,
    domains: parseDomains(loaded.domains),
    blocklist: {
      domains: list(loaded.blockedDomains).map((d) => d.toLowerCase()),
      patterns: list(loaded.blockedPatterns),
    },
  };
}
