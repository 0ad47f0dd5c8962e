/**
 * The settings of llm-gateway: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * Where it listens and its log level are infra's presets; the default port is the
 * manifest's (`casebook.port` in package.json). The database (PGlite by default, PostgreSQL
 * with DATABASE_URL) holds tenants and their hashed API keys.
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.keepAliveMs; // 15000
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };
import {
  DEFAULT_CACHE_LOOKUP_QUEUE,
  DEFAULT_CACHE_LOOKUP_WAIT_MS,
  DEFAULT_CACHE_MAX_LOOKUPS,
} from "./api/semantic-cache.ts";
import { MAX_CACHE_EMBEDDING_DIMENSIONS } from "./clients/upstream-embedder.ts";
import {
  DEFAULT_DESTINATION,
  destinationsOf,
  MODEL_LIST_PATTERN,
  parseDestinationList,
  parseModelList,
} from "./domain/model-catalog.ts";
import { DEFAULT_PRICE_LIST, PRICE_LIST_PATTERN, parsePriceList } from "./domain/pricing.ts";
import { defaultModelNames } from "./sim/provider-behaviour.ts";
import {
  DEFAULT_USAGE_BATCH,
  DEFAULT_USAGE_FLUSH_MS,
  DEFAULT_USAGE_MAX_PENDING,
  MAX_USAGE_BATCH,
} from "./store/usage-writer.ts";

/** How long a checked API key is trusted without asking the database again: the revocation bound. */
const DEFAULT_KEY_CACHE_TTL_MS = 5_000;
/** LLM_GATEWAY_BOOTSTRAP_TENANT value that turns the demo tenant off. */
export const BOOTSTRAP_OFF = "off";
export const DEFAULT_BOOTSTRAP_TENANT = "demo";
/** LG-11's default threshold: above the labelled set's most similar must-not-hit pair (0.832 → 0.84), with a margin. */
export const DEFAULT_CACHE_THRESHOLD = 0.86;
/** The upstream embeddings' length: the lexical embedder's, well inside `cube`'s 100. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 96;
/** An embedding is one short call; a cache that waits longer than the answer would take is no cache. */
export const DEFAULT_EMBEDDINGS_TIMEOUT_MS = 2_000;

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...databaseFields({
    system: "llm-gateway",
    envPrefix: "LLM_GATEWAY_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs", "connectTimeoutMs"],
    maxConnectionsDefault: 10,
    statementTimeoutMsDefault: 5_000,
  }),
  upstreamUrl: field.url({
    env: "LLM_GATEWAY_UPSTREAM_URL",
    protocols: ["http:", "https:"],
    description:
      "The OpenAI-compatible provider's base URL (…/v1); unset = the provider simulator, started in-process on a free port",
  }),
  upstreamApiKey: field.string({
    env: "LLM_GATEWAY_UPSTREAM_API_KEY",
    secret: true,
    maxLength: 512,
    description: "Bearer key the gateway sends upstream (the tenants' keys never leave the gateway)",
  }),
  models: field.string({
    env: "LLM_GATEWAY_MODELS",
    default: defaultModelNames.join(","),
    pattern: MODEL_LIST_PATTERN,
    description:
      "Models served, comma-separated: `name`, `name=upstream-model`, or `name=chain` (LG-19: clients call the name). A chain is tiers tried in order joined by `>`, a tier equal deployments joined by `|` (load-balanced), each `upstream-model@destination` (no `@` = the default destination): `smart=gpt-4o@east|gpt-4o@west>gpt-4o-mini@east`",
  }),
  destinations: field.string({
    env: "LLM_GATEWAY_DESTINATIONS",
    default: "",
    maxLength: 8_192,
    description:
      "More destinations beside the default one (LLM_GATEWAY_UPSTREAM_URL), comma-separated `name=url` (OpenAI-compatible base URLs, …/v1; `name=anthropic+https://…/v1` for an Anthropic Messages provider, translated both ways); they share LLM_GATEWAY_UPSTREAM_API_KEY",
  }),
  breakerTtftMs: field.int({
    env: "LLM_GATEWAY_BREAKER_TTFT_MS",
    default: 10_000,
    min: 10,
    max: 600_000,
    description:
      "LG-08: a stream whose first token comes later than this counts as a failure of its deployment",
  }),
  breakerFailures: field.int({
    env: "LLM_GATEWAY_BREAKER_FAILURES",
    default: 5,
    min: 1,
    max: 1_000,
    description:
      "LG-08: consecutive failures (5xx, 429, reset, timeout, TTFT over the bound) that open a deployment's breaker",
  }),
  breakerFailureRatePercent: field.int({
    env: "LLM_GATEWAY_BREAKER_FAILURE_RATE_PERCENT",
    default: 50,
    min: 1,
    max: 100,
    description:
      "LG-08: failure percentage over a deployment's last 20 calls (at least 10) that opens its breaker",
  }),
  breakerOpenMs: field.int({
    env: "LLM_GATEWAY_BREAKER_OPEN_MS",
    default: 30_000,
    min: 10,
    max: 3_600_000,
    description: "LG-08: how long an open deployment is skipped before one probe request is let through",
  }),
  maxOutputTokens: field.int({
    env: "LLM_GATEWAY_MAX_OUTPUT_TOKENS",
    default: 16_384,
    min: 1,
    max: 1_000_000,
    description: "Largest max_tokens a request may ask of any model; above it a 400 names max_tokens",
  }),
  keepAliveMs: field.int({
    env: "LLM_GATEWAY_KEEP_ALIVE_MS",
    default: 15_000,
    min: 50,
    max: 60_000,
    description:
      "LG-03: an SSE comment is written when a stream has been silent this long, below any load balancer's idle timeout (60 s on most)",
  }),
  upstreamConnectMs: field.int({
    env: "LLM_GATEWAY_UPSTREAM_CONNECT_MS",
    default: 5_000,
    min: 100,
    max: 60_000,
    description: "Bound on connecting to the provider",
  }),
  upstreamHeadersMs: field.int({
    env: "LLM_GATEWAY_UPSTREAM_HEADERS_MS",
    default: 60_000,
    min: 100,
    max: 600_000,
    description:
      "Request sent → the provider's response head (a non-streamed answer comes whole, so this bounds its generation too)",
  }),
  upstreamIdleMs: field.int({
    env: "LLM_GATEWAY_UPSTREAM_IDLE_MS",
    default: 120_000,
    min: 100,
    max: 600_000,
    description: "Longest silence inside a provider's stream before it counts as cut (LLM_STREAM_TRUNCATED)",
  }),
  generationTimeoutMs: field.int({
    env: "LLM_GATEWAY_GENERATION_TIMEOUT_MS",
    default: 600_000,
    min: 1_000,
    max: 3_600_000,
    description: "Bound on one whole generation, streamed or not (minutes: LG-01)",
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    description:
      "The token counter shared by every replica (LG-07); unset = in-process (one replica only: budgets are per process then)",
  }),
  budgets: field.bool({
    env: "LLM_GATEWAY_BUDGETS",
    default: true,
    description:
      "LG-05/06/07: token and request budgets; false = plain proxying (no tokenizer, no reservation: the bench's baseline)",
  }),
  budgetFailMode: field.enum(["closed", "open"], {
    env: "LLM_GATEWAY_BUDGET_FAIL_MODE",
    default: "closed",
    description:
      "When the token counter (Redis) cannot be reached: closed = 503, nothing unmetered reaches the provider; open = requests pass unmetered (counted in llm_gateway_unmetered_total)",
  }),
  redisCommandTimeoutMs: field.int({
    env: "LLM_GATEWAY_REDIS_TIMEOUT_MS",
    default: 500,
    min: 10,
    max: 10_000,
    description:
      "Bound on one counter call (reserve or settle); past it the counter counts as down (LLM_GATEWAY_BUDGET_FAIL_MODE)",
  }),
  budgetWindowMs: field.int({
    env: "LLM_GATEWAY_BUDGET_WINDOW_MS",
    default: 60_000,
    min: 1_000,
    max: 86_400_000,
    description: "The budget window: 60000 makes the limits RPM and TPM",
  }),
  tenantRpm: field.int({
    env: "LLM_GATEWAY_TENANT_RPM",
    default: 600,
    min: 1,
    max: 100_000_000,
    description: "Requests per window of a tenant created by this process (bootstrap, admin API without rpm)",
  }),
  tenantTpm: field.int({
    env: "LLM_GATEWAY_TENANT_TPM",
    default: 200_000,
    min: 1,
    max: 1_000_000_000_000,
    description: "Tokens per window of a tenant created by this process (bootstrap, admin API without tpm)",
  }),
  modelRpm: field.int({
    env: "LLM_GATEWAY_MODEL_RPM",
    default: 0,
    min: 0,
    max: 100_000_000,
    description: "Requests per window of each tenant on each model (0 = no such limit)",
  }),
  modelTpm: field.int({
    env: "LLM_GATEWAY_MODEL_TPM",
    default: 0,
    min: 0,
    max: 1_000_000_000_000,
    description: "Tokens per window of each tenant on each model (0 = no such limit)",
  }),
  destinationRpm: field.int({
    env: "LLM_GATEWAY_DESTINATION_RPM",
    default: 0,
    min: 0,
    max: 100_000_000,
    description:
      "The provider's own quota: requests per window per upstream model, all tenants together (0 = none)",
  }),
  destinationTpm: field.int({
    env: "LLM_GATEWAY_DESTINATION_TPM",
    default: 0,
    min: 0,
    max: 1_000_000_000_000,
    description:
      "The provider's own quota: tokens per window per upstream model, all tenants together (0 = none)",
  }),
  cache: field.bool({
    env: "LLM_GATEWAY_CACHE",
    default: true,
    description:
      "LG-11/12: the semantic cache — deterministic requests (temperature 0, no tools) answered from the tenant's earlier answers by embedding similarity",
  }),
  cacheThreshold: field.number({
    env: "LLM_GATEWAY_CACHE_THRESHOLD",
    default: DEFAULT_CACHE_THRESHOLD,
    min: 0.5,
    max: 1,
    description:
      "LG-11: cosine similarity at or above which an earlier answer is served (chosen on test/fixtures/cache-pairs.json: 0.84 is the lowest with no false hit there; the default keeps a margin)",
  }),
  cacheTtlMs: field.int({
    env: "LLM_GATEWAY_CACHE_TTL_MS",
    default: 3_600_000,
    min: 1_000,
    max: 30 * 86_400_000,
    description: "How long a cached answer may be served",
  }),
  cacheMaxLookups: field.int({
    env: "LLM_GATEWAY_CACHE_MAX_LOOKUPS",
    default: DEFAULT_CACHE_MAX_LOOKUPS,
    min: 1,
    max: 1_000,
    description:
      "Semantic cache lookups at once (each holds a database connection: keep it under LLM_GATEWAY_DB_MAX_CONNECTIONS, so key checks and usage rows still get one)",
  }),
  cacheLookupQueue: field.int({
    env: "LLM_GATEWAY_CACHE_LOOKUP_QUEUE",
    default: DEFAULT_CACHE_LOOKUP_QUEUE,
    min: 0,
    max: 100_000,
    description:
      'Semantic cache lookups waiting for a slot; past it a request is answered uncached (llm_gateway_cache_lookups_total{result="shed"})',
  }),
  cacheLookupWaitMs: field.int({
    env: "LLM_GATEWAY_CACHE_LOOKUP_WAIT_MS",
    default: DEFAULT_CACHE_LOOKUP_WAIT_MS,
    min: 1,
    max: 10_000,
    description: "Longest wait for a semantic cache lookup slot; past it the request is answered uncached",
  }),
  embeddingsModel: field.string({
    env: "LLM_GATEWAY_EMBEDDINGS_MODEL",
    maxLength: 200,
    pattern: /^[A-Za-z0-9._:/-]+$/,
    description:
      "LG-11: the semantic cache's embeddings from the upstream's /v1/embeddings with this model (e.g. text-embedding-3-small); unset = the local lexical embedder (no network, words only). Choose LLM_GATEWAY_CACHE_THRESHOLD for it: the default was chosen for the lexical one",
  }),
  embeddingsUrl: field.url({
    env: "LLM_GATEWAY_EMBEDDINGS_URL",
    protocols: ["http:", "https:"],
    description:
      "The OpenAI-compatible base URL (…/v1) of the embeddings; unset = LLM_GATEWAY_UPSTREAM_URL (or the simulator). Sent LLM_GATEWAY_UPSTREAM_API_KEY",
  }),
  embeddingsDimensions: field.int({
    env: "LLM_GATEWAY_EMBEDDINGS_DIMENSIONS",
    default: DEFAULT_EMBEDDING_DIMENSIONS,
    min: 2,
    max: MAX_CACHE_EMBEDDING_DIMENSIONS,
    description:
      "The vector length asked of the upstream (`dimensions`; OpenAI's text-embedding-3 models shorten on request). At most 100: the cache's `cube` vectors hold no more",
  }),
  embeddingsTimeoutMs: field.int({
    env: "LLM_GATEWAY_EMBEDDINGS_TIMEOUT_MS",
    default: DEFAULT_EMBEDDINGS_TIMEOUT_MS,
    min: 50,
    max: 60_000,
    description: "Longest wait for one embedding; past it the request goes upstream uncached",
  }),
  keyCacheTtlMs: field.int({
    env: "LLM_GATEWAY_KEY_CACHE_TTL_MS",
    default: DEFAULT_KEY_CACHE_TTL_MS,
    min: 0,
    max: 300_000,
    description:
      "How long a checked API key is trusted from memory (per replica) before the database is asked again: a key revoked elsewhere still works here for at most this long (0 = ask the database every request)",
  }),
  usageBatch: field.int({
    env: "LLM_GATEWAY_USAGE_BATCH",
    default: DEFAULT_USAGE_BATCH,
    min: 1,
    max: MAX_USAGE_BATCH,
    description: "Usage rows per INSERT (rows are written off the request path, in batches)",
  }),
  usageMaxPending: field.int({
    env: "LLM_GATEWAY_USAGE_MAX_PENDING",
    default: DEFAULT_USAGE_MAX_PENDING,
    min: 1,
    max: 1_000_000,
    description:
      "Usage rows waiting to be written at most; past it a request writes its own row and waits for it (backpressure: rows are never dropped for room)",
  }),
  usageFlushMs: field.int({
    env: "LLM_GATEWAY_USAGE_FLUSH_MS",
    default: DEFAULT_USAGE_FLUSH_MS,
    min: 0,
    max: 5_000,
    description: "How long the first usage row of a quiet moment waits for others to share its INSERT",
  }),
  prices: field.string({
    env: "LLM_GATEWAY_PRICES",
    default: DEFAULT_PRICE_LIST,
    pattern: PRICE_LIST_PATTERN,
    description:
      "The price table, USD per million tokens by upstream model: `model=input/cached-input/output`, comma-separated (a model not listed costs 0)",
  }),
  spendWindowMs: field.int({
    env: "LLM_GATEWAY_SPEND_WINDOW_MS",
    default: 30 * 86_400_000,
    min: 60_000,
    max: 366 * 86_400_000,
    description: "The window of a tenant's money budget (spendLimitUsd at the admin API); 30 days by default",
  }),
  drainTimeoutMs: field.int({
    env: "LLM_GATEWAY_DRAIN_TIMEOUT_MS",
    default: 25_000,
    min: 100,
    max: 3_600_000,
    description:
      "LG-15: on SIGTERM, how long open streams may run to their end before the rest are cut (below the orchestrator's grace period: Kubernetes gives 30 s)",
  }),
  bootstrapTenant: field.string({
    env: "LLM_GATEWAY_BOOTSTRAP_TENANT",
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    description: `Tenant created with a printed API key on first start; "${BOOTSTRAP_OFF}" = none; unset = "${DEFAULT_BOOTSTRAP_TENANT}" on PGlite, none on PostgreSQL`,
  }),
  adminToken: field.string({
    env: "LLM_GATEWAY_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description: "Bearer token of /v1/admin/* (tenants and their API keys); unset = no admin API",
  }),
  ...logLevelField(),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

function problem(
  setting: "models" | "destinations" | "prices",
  env: string,
  value: string,
  expected: string,
  error: unknown,
) {
  return new ConfigError([
    { setting, env, source: "env", value, expected, message: `${env}: ${(error as Error).message}` },
  ]);
}

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const config = loadConfig(configSchema, { env });
  let destinations: Map<string, string>;
  try {
    destinations = parseDestinationList(config.destinations);
    if (destinations.has(DEFAULT_DESTINATION))
      throw new RangeError(`"${DEFAULT_DESTINATION}" is LLM_GATEWAY_UPSTREAM_URL's name; pick another`);
  } catch (error) {
    throw problem(
      "destinations",
      "LLM_GATEWAY_DESTINATIONS",
      config.destinations,
      "name=url, each name once",
      error,
    );
  }
  try {
    const catalog = parseModelList(config.models);
    for (const name of destinationsOf(catalog)) {
      if (name !== DEFAULT_DESTINATION && !destinations.has(name))
        throw new RangeError(`destination ${name} is not in LLM_GATEWAY_DESTINATIONS`);
    }
  } catch (error) {
    throw problem(
      "models",
      "LLM_GATEWAY_MODELS",
      config.models,
      "each model name once, known destinations",
      error,
    );
  }
  try {
    parsePriceList(config.prices);
  } catch (error) {
    throw problem("prices", "LLM_GATEWAY_PRICES", config.prices, "each model priced once", error);
  }
  return config;
}
