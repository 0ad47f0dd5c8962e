/**
 * The config fields every service's schema repeats, as presets to spread into it:
 * where it listens (`listenFields`), its log level (`logLevelField`), its database and
 * pool (`databaseFields`, loaded config → `openDatabase` options with
 * `databaseOptionsOf`). Each keeps a system's settings as they are — env names, bounds,
 * help text: options name what differs — and the spread order is the order `--help`
 * lists. Only kit's config here (no engine, no HTTP), so reading a schema stays cheap;
 * the start sequence that uses them is `start-service.ts`.
 *
 * @example
 * export const configSchema = {
 *   ...listenFields({ port: 8104 }),
 *   ...databaseFields({ system: "payments", envPrefix: "PAYMENTS_DB", fields: ["schema", "maxConnections"] }),
 *   acquirerUrl: field.url({ env: "ACQUIRER_URL", description: "The card acquirer" }),
 *   ...logLevelField(),
 * };
 * const config = loadConfig(configSchema, { env });
 * await openDatabase({ system: "payments", env, ...databaseOptionsOf(config) });
 */
import { type Field, field } from "@casebook/kit/config";
import type { OpenDatabaseOptions } from "../sql/open-database.ts";

export const logLevels = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof logLevels)[number];

export interface ListenFieldOptions {
  /** The default port (ours: HTTP 8100–8199, wire protocols from 7000). */
  port: number;
  /** Default `PORT` / `HOST`. */
  portEnv?: string;
  hostEnv?: string;
  /** Default "HTTP port" / "HTTP interface (0.0.0.0 for all)". */
  portDescription?: string;
  hostDescription?: string;
}

/** `port` and `host`: where the service listens (port 0 = any free port). */
export function listenFields(options: ListenFieldOptions) {
  return {
    port: field.int({
      env: options.portEnv ?? "PORT",
      default: options.port,
      min: 0,
      max: 65535,
      description: options.portDescription ?? "HTTP port",
    }),
    host: field.string({
      env: options.hostEnv ?? "HOST",
      default: "127.0.0.1",
      description: options.hostDescription ?? "HTTP interface (0.0.0.0 for all)",
    }),
  };
}

/** `logLevel` from LOG_LEVEL (default info). */
export function logLevelField() {
  return {
    logLevel: field.enum(logLevels, { env: "LOG_LEVEL", default: "info", description: "Log level" }),
  };
}

/** Pool settings a system may expose, in the order it lists them. */
export type DatabaseField =
  | "schema"
  | "maxConnections"
  | "statementTimeoutMs"
  | "connectTimeoutMs"
  | "preparedStatements";

export interface DatabaseFieldOptions<F extends DatabaseField> {
  /** The system's name: the PGlite directory `$CASEBOOK_DATA/<system>` and the default schema. */
  system: string;
  /** Prefix of the pool settings' env vars: `PAYMENTS_DB` → PAYMENTS_DB_MAX_CONNECTIONS. */
  envPrefix: string;
  /** Which pool settings, in this order (after DATABASE_URL). */
  fields: readonly F[];
  /** `duration-ms` reads "5s" or "250ms"; `int` reads milliseconds (default). */
  timeouts?: "int" | "duration-ms";
  maxConnectionsDefault?: number;
  statementTimeoutMsDefault?: number;
  connectTimeoutMsDefault?: number;
  /** Statement texts prepared automatically per connection (`PgDatabaseOptions.preparedStatements`); default 0. */
  preparedStatementsDefault?: number;
  /** Help text of a setting, where the system says more than the preset's. */
  descriptions?: Partial<Record<DatabaseField, string>>;
}

const databaseDescriptions: Record<DatabaseField, string> = {
  schema: "Schema of the tables (unset = <system>): replicas share one; a test or a bench gets a fresh one",
  maxConnections:
    "PostgreSQL pool size of this instance: instances × this must fit the server's max_connections",
  statementTimeoutMs:
    "Bound on one SQL statement (server statement_timeout; on a silent link the driver gives up 5 s later): past it a request answers 503 SQL_UNAVAILABLE",
  connectTimeoutMs: "Bound on opening a PostgreSQL connection and on waiting for a free one from a full pool",
  preparedStatements:
    "Distinct statement texts each PostgreSQL connection prepares once (parsed and planned once, then only bound and run); 0 = prepare none",
};

const databaseKeys = {
  schema: "databaseSchema",
  maxConnections: "databaseMaxConnections",
  statementTimeoutMs: "databaseStatementTimeoutMs",
  connectTimeoutMs: "databaseConnectTimeoutMs",
  preparedStatements: "databasePreparedStatements",
} as const;

type DatabaseFieldsOf<F extends DatabaseField> = { databaseUrl: Field<string | undefined> } & {
  [K in F as (typeof databaseKeys)[K]]: K extends "schema" ? Field<string | undefined> : Field<number>;
};

/**
 * `databaseUrl` (DATABASE_URL: PostgreSQL, unset = embedded PGlite) and the pool settings
 * named in `fields`: `databaseSchema`, `databaseMaxConnections`, `databaseStatementTimeoutMs`,
 * `databaseConnectTimeoutMs`. Pass the loaded config to `databaseOptionsOf`.
 */
export function databaseFields<F extends DatabaseField>(
  options: DatabaseFieldOptions<F>,
): DatabaseFieldsOf<F> {
  const describe = (name: DatabaseField) =>
    options.descriptions?.[name] ?? databaseDescriptions[name].replace("<system>", options.system);
  const timeout = (env: string, defaultMs: number, max: number, name: DatabaseField) => {
    const spec = { env, default: defaultMs, min: 100, max, description: describe(name) };
    return options.timeouts === "duration-ms" ? field.durationMs(spec) : field.int(spec);
  };
  const byName = {
    schema: () =>
      field.string({
        env: `${options.envPrefix}_SCHEMA`,
        pattern: /^[a-z_][a-z0-9_]{0,62}$/,
        description: describe("schema"),
      }),
    maxConnections: () =>
      field.int({
        env: `${options.envPrefix}_MAX_CONNECTIONS`,
        default: options.maxConnectionsDefault ?? 10,
        min: 1,
        max: 200,
        description: describe("maxConnections"),
      }),
    statementTimeoutMs: () =>
      timeout(
        `${options.envPrefix}_STATEMENT_TIMEOUT_MS`,
        options.statementTimeoutMsDefault ?? 10_000,
        600_000,
        "statementTimeoutMs",
      ),
    connectTimeoutMs: () =>
      timeout(
        `${options.envPrefix}_CONNECT_TIMEOUT_MS`,
        options.connectTimeoutMsDefault ?? 5_000,
        60_000,
        "connectTimeoutMs",
      ),
    preparedStatements: () =>
      field.int({
        env: `${options.envPrefix}_PREPARED_STATEMENTS`,
        default: options.preparedStatementsDefault ?? 0,
        min: 0,
        max: 10_000,
        description: describe("preparedStatements"),
      }),
  };
  const fields: Record<string, unknown> = {
    databaseUrl: field.url({
      env: "DATABASE_URL",
      protocols: ["postgres:", "postgresql:"],
      secret: true,
      description: `PostgreSQL; unset = embedded PGlite in $CASEBOOK_DATA/${options.system}`,
    }),
  };
  for (const name of options.fields) fields[databaseKeys[name]] = byName[name]();
  return fields as DatabaseFieldsOf<F>;
}

/** What `databaseFields` loads to (each pool setting present only when the system exposes it). */
export interface DatabaseConfig {
  readonly databaseUrl: string | undefined;
  readonly databaseSchema?: string | undefined;
  readonly databaseMaxConnections?: number;
  readonly databaseStatementTimeoutMs?: number;
  readonly databaseConnectTimeoutMs?: number;
  readonly databasePreparedStatements?: number;
}

/** `openDatabase`'s url, schema and pool from a loaded config (unset settings keep the pool's defaults). */
export function databaseOptionsOf(
  config: DatabaseConfig,
): Pick<OpenDatabaseOptions, "url" | "schema" | "pool"> {
  const pool: NonNullable<OpenDatabaseOptions["pool"]> = {
    ...(config.databaseMaxConnections === undefined ? {} : { maxConnections: config.databaseMaxConnections }),
    ...(config.databaseStatementTimeoutMs === undefined
      ? {}
      : { statementTimeoutMs: config.databaseStatementTimeoutMs }),
    ...(config.databaseConnectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: config.databaseConnectTimeoutMs }),
    ...(config.databasePreparedStatements === undefined
      ? {}
      : { preparedStatements: config.databasePreparedStatements }),
  };
  return {
    url: config.databaseUrl,
    ...(config.databaseSchema === undefined ? {} : { schema: config.databaseSchema }),
    pool,
  };
}
