/**
 * The settings of flash-sale: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * Where it listens, its log level and its database are infra's presets; the default port is
 * the manifest's (`casebook.port` in package.json).
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.stockMode; // "script"
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };

/** Holds per reserve-script call by default: ~50 µs of Redis time, short enough not to stall other keys. */
export const DEFAULT_RESERVE_BATCH = 128;
/** Reserve batches in flight at once: two keep Redis busy while Node reads the last reply. */
export const DEFAULT_RESERVE_LANES = 2;

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...databaseFields({
    system: "flash-sale",
    envPrefix: "FLASH_SALE_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs"],
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    secret: true,
    description: "Redis for the hot stock (the reserve script); unset = the in-process store (one replica)",
  }),
  redisKeyPrefix: field.string({
    env: "FLASH_SALE_REDIS_PREFIX",
    default: "flash-sale:",
    maxLength: 64,
    description: "Prefix of every Redis key this service writes",
  }),
  adminToken: field.string({
    env: "FLASH_SALE_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description: "The operator's bearer token for /v1/admin (creating sales); unset = no admin API",
  }),
  stockMode: field.enum(["script", "naive"], {
    env: "FLASH_SALE_STOCK_MODE",
    default: "script",
    description:
      "script = the atomic reserve script (FS-05); naive = read, check, write in three steps (FS-03: oversells, for demonstration only)",
  }),
  holdTtlMs: field.durationMs({
    env: "FLASH_SALE_HOLD_TTL_MS",
    default: 600_000,
    min: 1_000,
    max: 86_400_000,
    description: "How long a hold waits for payment before its tickets go back (FS-08: 10 minutes)",
  }),
  reconcileIntervalMs: field.durationMs({
    env: "FLASH_SALE_RECONCILE_INTERVAL_MS",
    default: 1_000,
    min: 10,
    max: 600_000,
    description: "Pause of the hold reconciler between rounds that found nothing more (FS-09)",
  }),
  reserveMaxBatch: field.int({
    env: "FLASH_SALE_RESERVE_MAX_BATCH",
    default: DEFAULT_RESERVE_BATCH,
    min: 1,
    max: 1_000,
    description:
      "Reservations of concurrent callers sent as one reserve-script call (each decided on its own); 1 = one call each",
  }),
  reserveMaxPending: field.int({
    env: "FLASH_SALE_RESERVE_MAX_PENDING",
    default: 10_000,
    min: 1,
    max: 1_000_000,
    description: "Reservations waiting for the next batch; past it a reservation is refused with 503",
  }),
  reconcileMaxBatch: field.int({
    env: "FLASH_SALE_RECONCILE_MAX_BATCH",
    default: 500,
    min: 1,
    max: 10_000,
    description: "Due holds the reconciler handles per sale per round",
  }),
  chargingRecheckMs: field.durationMs({
    env: "FLASH_SALE_CHARGING_RECHECK_MS",
    default: 30_000,
    min: 100,
    max: 3_600_000,
    description: "How often the reconciler looks again at a frozen (charging) hold past its deadline",
  }),
  admitPerS: field.number({
    env: "FLASH_SALE_ADMIT_PER_S",
    default: 100,
    min: 0.1,
    max: 100_000,
    description: "Waiting-room entrants admitted to checkout per second (FS-13)",
  }),
  maxActive: field.int({
    env: "FLASH_SALE_MAX_ACTIVE",
    default: 500,
    min: 1,
    max: 1_000_000,
    description: "Admitted entrants live in checkout at once, at most",
  }),
  graceMs: field.durationMs({
    env: "FLASH_SALE_GRACE_MS",
    default: 30_000,
    min: 100,
    max: 600_000,
    description: "Silence after which an admitted entrant's checkout slot goes to the next one",
  }),
  sessionMs: field.durationMs({
    env: "FLASH_SALE_SESSION_MS",
    default: 900_000,
    min: 1_000,
    max: 86_400_000,
    description: "Longest an admitted entrant holds a checkout slot; also its token's lifetime",
  }),
  roomMaxEntrants: field.int({
    env: "FLASH_SALE_ROOM_MAX_ENTRANTS",
    default: 1_000_000,
    min: 1,
    max: 10_000_000,
    description: "Entrants one waiting room keeps at most; past it joins get 503 ROOM_FULL",
  }),
  roomTickMs: field.durationMs({
    env: "FLASH_SALE_ROOM_TICK_MS",
    default: 250,
    min: 10,
    max: 60_000,
    description: "How often the waiting rooms admit their next batch",
  }),
  roomCarryMs: field.durationMs({
    env: "FLASH_SALE_ROOM_CARRY_MS",
    min: 10,
    max: 60_000,
    description:
      "Admission credit a waiting room keeps across a late tick, in ms of its rate; unset: up to FLASH_SALE_MAX_ACTIVE (a late tick then admits its backlog at once, above the rate)",
  }),
  tokenKeys: field.string({
    env: "FLASH_SALE_TOKEN_KEYS",
    maxLength: 2_000,
    secret: true,
    description:
      "Admission token keys, kid=secret pairs comma-separated, the first signs (secrets >= 32 chars); unset = a random key per process",
  }),
  ipRatePerS: field.number({
    env: "FLASH_SALE_IP_RATE_PER_S",
    default: 200,
    min: 0,
    max: 1_000_000,
    description:
      "FS-14: requests per second one client IP may make to /v1/sales and /v1/holds (0 = no limit)",
  }),
  ipBurst: field.int({
    env: "FLASH_SALE_IP_BURST",
    default: 1_000,
    min: 1,
    max: 1_000_000,
    description: "FS-14: requests one client IP may make at once before its rate applies",
  }),
  rateLimiterUrl: field.url({
    env: "RATE_LIMITER_URL",
    protocols: ["http:", "https:"],
    description:
      "The rate-limiter service for the per-IP limit (POST /v1/check, descriptor ip); unset = a local bucket per IP",
  }),
  rateLimiterToken: field.string({
    env: "RATE_LIMITER_TOKEN",
    minLength: 1,
    maxLength: 512,
    secret: true,
    description: "Bearer token of the rate-limiter service, when it asks for one",
  }),
  rateLimiterTimeoutMs: field.durationMs({
    env: "FLASH_SALE_RATE_LIMITER_TIMEOUT_MS",
    default: 200,
    min: 10,
    max: 10_000,
    description:
      "Bound on one per-IP check at the rate-limiter service (connect, headers, body each); past it the request goes through (fail open)",
  }),
  joinPowBits: field.int({
    env: "FLASH_SALE_JOIN_POW_BITS",
    default: 0,
    min: 0,
    max: 24,
    description:
      "FS-14: leading zero bits of the proof of work a join must carry (about 2^bits hashes per join; 0 = none)",
  }),
  paymentsUrl: field.url({
    env: "PAYMENTS_URL",
    protocols: ["http:", "https:"],
    description:
      "The payments service charges go through (its public API); unset = charges approved locally (demo)",
  }),
  paymentsApiKey: field.string({
    env: "PAYMENTS_API_KEY",
    minLength: 8,
    maxLength: 256,
    secret: true,
    description: "The merchant API key flash-sale charges with (needed with PAYMENTS_URL)",
  }),
  chargeRatePerS: field.number({
    env: "FLASH_SALE_CHARGE_RATE_PER_S",
    // The drain ceiling measured against payments on this shared 2-core machine (README: ~14-19
    // charges/s sustained at load ~20); raise it to what `casebook bench flash-sale --drain-only`
    // measures where payments runs (its saga reaches ~125/s on an idle machine).
    default: 15,
    min: 0.1,
    max: 10_000,
    description:
      "Charges that may reach payments in any one second, this process (FS-15): at or below what payments sustains (the bench's drain ceiling; payments' own PAYMENTS_ACQUIRER_RATE_PER_S is 200)",
  }),
  chargeMaxInFlight: field.int({
    env: "FLASH_SALE_CHARGE_MAX_IN_FLIGHT",
    default: 8,
    min: 1,
    max: 256,
    description:
      "Charge calls open at payments at once, this process (each also holds a permit of the rate's window, so never more than the rate land in any second)",
  }),
  chargeTimeoutMs: field.durationMs({
    env: "FLASH_SALE_CHARGE_TIMEOUT_MS",
    default: 10_000,
    min: 100,
    max: 120_000,
    description: "Bound on one call to payments; past it the charge is asked again later with the same key",
  }),
  ...logLevelField(),
};

export type SystemConfig = Omit<ConfigOf<typeof configSchema>, "tokenKeys"> & {
  tokenKeys: { kid: string; secret: string }[] | undefined;
};

function parseTokenKeys(text: string | undefined): SystemConfig["tokenKeys"] {
  if (text === undefined) return undefined;
  const keys = text.split(",").map((pair) => {
    const at = pair.indexOf("=");
    const kid = pair.slice(0, at).trim();
    const secret = pair.slice(at + 1).trim();
    if (at < 1 || !/^[A-Za-z0-9_-]{1,64}$/.test(kid) || secret.length < 32) {
      throw new ConfigError([
        {
          setting: "tokenKeys",
          env: "FLASH_SALE_TOKEN_KEYS",
          source: "env",
          value: "(secret)",
          expected: "kid=secret pairs, comma-separated: kid of [A-Za-z0-9_-], secret of 32+ characters",
          message:
            "FLASH_SALE_TOKEN_KEYS: expected kid=secret pairs, kid of [A-Za-z0-9_-], secret of 32+ characters",
        },
      ]);
    }
    return { kid, secret };
  });
  return keys;
}

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const loaded = loadConfig(configSchema, { env });
  if (loaded.paymentsUrl !== undefined && loaded.paymentsApiKey === undefined) {
    throw new ConfigError([
      {
        setting: "paymentsApiKey",
        env: "PAYMENTS_API_KEY",
        source: "env",
        value: "(unset)",
        expected: "a merchant API key of the payments service at PAYMENTS_URL",
        message: "PAYMENTS_API_KEY is required when PAYMENTS_URL is set (npx casebook payments new-key)",
      },
    ]);
  }
  return { ...loaded, tokenKeys: parseTokenKeys(loaded.tokenKeys) };
}
