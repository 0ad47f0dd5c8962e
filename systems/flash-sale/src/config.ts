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
import { type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };

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
  ...logLevelField(),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  return loadConfig(configSchema, { env });
}
