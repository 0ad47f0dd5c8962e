/**
 * The start sequence every service's `main.ts` repeats, once:
 *
 *     open the database → create the service → migrate → build (routes, workers) → listen → announce
 *
 * A failing step closes what the steps before it opened, last opened first: the
 * database when the service cannot be created; otherwise the service, whose close
 * hooks (run last-added first) stop what `build` started and then close the pool (the
 * first hook). A start that fails thus leaves no pool, socket or loop behind, and
 * rethrows the step's own error, for the service entry to print as it always has.
 * The config fields it reads come from `service-preset.ts`.
 *
 * @example
 * const config = loadConfig(configSchema, { env });
 * const started = await startService({
 *   service: { name: "payments", version: "0.1.0", log: { level: config.logLevel }, errors: [paymentsErrors] },
 *   database: { system: "payments", env, ...databaseOptionsOf(config), migrate: (db) => runMigrations(db, { dir }) },
 *   build: async ({ service, db }) => registerApi(service.app, db),
 *   listen: { port: config.port, host: config.host },
 *   listening: (built, { db }) => ({ engine: db.engine }),
 * });
 * await started.close();
 */
import type { OpenDatabaseOptions } from "../sql/open-database.ts";
import type { Database } from "../sql/sql.ts";
import { createService, type ListenOptions, type Service, type ServiceOptions } from "./service.ts";

/**
 * Inside the service base's 900 ms readiness timeout, so a slow ping reports its own
 * error instead of the check's timeout.
 */
export const databasePingTimeoutMs = 800;

/** The database step: opened first, pinged by /readyz, migrated before `build`, closed last. */
export interface DatabaseStep extends OpenDatabaseOptions {
  /** Brings the schema up to date (runMigrations, or the system's own migrate). */
  migrate(db: Database): Promise<unknown>;
  /** /readyz's `database` check bound; default `databasePingTimeoutMs`. */
  pingTimeoutMs?: number;
}

export interface StartServiceOptions<T, Db extends Database | undefined> {
  /** createService's options; `checks.database` and the pool's close hook are added with `database`. */
  service: ServiceOptions;
  database?: DatabaseStep;
  /** Routes, workers, clients: everything between the migration and listen. Register close hooks here. */
  build(context: { service: Service; db: Db }): Promise<T>;
  listen: ListenOptions;
  /** Fields of the "<name> listening" line beside `url` (the engine, the policy count…). */
  listening?(built: T, context: ListeningContext<Db>): Record<string, unknown>;
  /** The line's message; default `<name> listening`. */
  listeningMessage?: string;
  /** After the line: what only this start may print (a bootstrap key). */
  announce?(built: T, context: ListeningContext<Db>): void;
}

export interface ListeningContext<Db extends Database | undefined> {
  readonly url: string;
  readonly service: Service;
  readonly db: Db;
}

export interface StartedService<T, Db extends Database | undefined> {
  readonly url: string;
  readonly service: Service;
  readonly db: Db;
  readonly built: T;
  close(): Promise<void>;
}

/**
 * Starts a service: database → service → migrate → build → listen → announce; a failure
 * closes what was opened, in reverse, and rethrows.
 */
export async function startService<T>(
  options: StartServiceOptions<T, Database> & { database: DatabaseStep },
): Promise<StartedService<T, Database>>;
export async function startService<T>(
  options: StartServiceOptions<T, undefined> & { database?: undefined },
): Promise<StartedService<T, undefined>>;
export async function startService<T>(
  options: StartServiceOptions<T, Database | undefined>,
): Promise<StartedService<T, Database | undefined>> {
  const step = options.database;
  // Loaded only when used: a service without SQL (rate limiter, cache) does not pay for pg and PGlite at start.
  const db = step ? await (await import("../sql/open-database.ts")).openDatabase(step) : undefined;
  let service: Service;
  try {
    service = createService(db ? withDatabase(options.service, db, step!) : options.service);
  } catch (error) {
    await db?.close();
    throw error;
  }
  try {
    if (db) await step!.migrate(db);
    const built = await options.build({ service, db });
    const { url } = await service.listen(options.listen);
    const context = { url, service, db };
    service.log.info(
      { url, ...options.listening?.(built, context) },
      options.listeningMessage ?? `${options.service.name} listening`,
    );
    options.announce?.(built, context);
    return { url, service, db, built, close: () => service.close() };
  } catch (error) {
    // Close hooks run last-added first: what build started stops, then the pool closes.
    await service
      .close()
      .catch((closeError: unknown) => service.log.error({ err: closeError }, "close failed"));
    throw error;
  }
}

function withDatabase(options: ServiceOptions, db: Database, step: DatabaseStep): ServiceOptions {
  const pingTimeoutMs = step.pingTimeoutMs ?? databasePingTimeoutMs;
  return {
    ...options,
    checks: { database: () => db.ping(pingTimeoutMs), ...options.checks },
    // First hook added, so it runs last: after every user of the pool.
    onClose: [() => db.close(), ...(options.onClose ?? [])],
  };
}
