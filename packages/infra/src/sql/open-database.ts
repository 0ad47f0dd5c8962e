/**
 * The composition-root choice of engine: PostgreSQL when a URL is configured
 * (`url` or `DATABASE_URL`), otherwise embedded PGlite in `$CASEBOOK_DATA/<system>`
 * (default `<cwd>/.casebook-data/<system>`), so `npm start` runs on a bare machine.
 * Either way the system lives in its own schema (default: its name, `-` → `_`), so
 * fourteen systems can share one PostgreSQL database without their tables meeting.
 *
 * @example
 * const db = await openDatabase({ system: "payments" });
 * await runMigrations(db, { dir: new URL("./migrations/", import.meta.url) });
 */
import { join, resolve } from "node:path";
import { openPgDatabase, type PgDatabaseOptions } from "./pg-database.ts";
import { openPgliteDatabase } from "./pglite-database.ts";
import { openPgliteThreadDatabase } from "./pglite-thread-database.ts";
import type { Database } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";
import { ensureSchema, schemaName } from "./sql-schema.ts";

export interface OpenDatabaseOptions {
  /** The system's name (`flash-sale`): names its data directory and its default schema. */
  system: string;
  /** PostgreSQL URL; wins over `DATABASE_URL`. */
  url?: string;
  /** PGlite data directory, or `memory://`; wins over `$CASEBOOK_DATA/<system>`. */
  dataDir?: string;
  /** Schema for `search_path`; default `schemaName(system)`. */
  schema?: string;
  /** Pool tuning when on PostgreSQL; see `PgDatabaseOptions` for each default. */
  pool?: Omit<PgDatabaseOptions, "url" | "schema" | "applicationName">;
  /** Where DATABASE_URL and CASEBOOK_DATA are read; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Base of the default data directory; default `process.cwd()`. */
  cwd?: string;
  /**
   * PGlite on a worker thread of its own (pglite-thread-database.ts), at most `maxPending`
   * requests waiting on it: for a store written on a hot path, so the engine's work is not the
   * calling thread's. Ignored on PostgreSQL (the engine is another process already).
   */
  pgliteThread?: { maxPending: number };
}

const SYSTEM_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

function checkSystem(system: string): string {
  if (!SYSTEM_PATTERN.test(system)) throw sqlErrors.create("SQL_NAME_INVALID", { fields: { system } });
  return system;
}

/** `$CASEBOOK_DATA/<system>`, or `<cwd>/.casebook-data/<system>` when CASEBOOK_DATA is unset. */
export function dataDirFor(
  system: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  cwd = process.cwd(),
): string {
  const root = env.CASEBOOK_DATA || join(cwd, ".casebook-data");
  return resolve(cwd, root, checkSystem(system));
}

function checkUrl(url: string): string {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = "";
  }
  if (protocol !== "postgres:" && protocol !== "postgresql:") {
    // The URL may carry a password: name the variable, not its value.
    throw sqlErrors.create("SQL_CONFIG_INVALID", { fields: { variable: "DATABASE_URL" } });
  }
  return url;
}

function openEngine(options: OpenDatabaseOptions, system: string, schema: string): Promise<Database> {
  const env = options.env ?? process.env;
  const url = options.url || env.DATABASE_URL;
  if (url) {
    const applicationName = `casebook-${system}`;
    return Promise.resolve(openPgDatabase({ ...options.pool, url: checkUrl(url), schema, applicationName }));
  }
  const dataDir = options.dataDir ?? dataDirFor(system, env, options.cwd);
  if (options.pgliteThread !== undefined) {
    return openPgliteThreadDatabase({ dataDir, schema, maxPending: options.pgliteThread.maxPending });
  }
  return openPgliteDatabase({ dataDir, schema });
}

/**
 * Opens the system's database on the configured engine and creates its schema if
 * missing, so a bad URL or an unreachable server fails the start, not the first request.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const system = checkSystem(options.system);
  const schema = options.schema ?? schemaName(system);
  const db = await openEngine(options, system, schema);
  try {
    await ensureSchema(db, schema);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
