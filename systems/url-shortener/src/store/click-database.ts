/**
 * Where the click log lives (US-15, issue 18). On PostgreSQL (`DATABASE_URL`): in the
 * service's own database — the engine is another process, so the click INSERT costs the
 * redirect's thread only its few parameters. On the embedded PGlite: in a database of its own,
 * `$CASEBOOK_DATA/url-shortener-clicks`, run on a worker thread of its own (infra's
 * pglite-thread-database.ts). PGlite executes a statement on the thread that calls it, and a
 * batch INSERT of one row per distinct click cost a quarter of the redirect thread's CPU when
 * the click log shared the links' PGlite; on its own thread the redirect's thread only posts
 * the batch's ten array literals and gets the answer back.
 *
 * The click database gets the service's whole schema (the same migrations, so its history is
 * one list); only its click tables — `clicks` and its day partitions, `click_rollups`, the edge
 * log's cursor — are used there, and on PGlite the service's own database keeps those tables
 * empty. Clicks recorded before this split stay in the service's database, unread.
 *
 * It is opened before the service's own database (main.ts): the two PGlites start on two
 * threads at once, so the second one does not add its whole start-up to the service's.
 *
 * @example
 * const clicks = await openClickDatabase({ system: "url-shortener", databaseUrl, env });
 * service.onClose(() => clicks.close()); // before the flusher's hook: hooks run last-added first
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { schemaName } from "@casebook/infra/sql/sql-schema";
import { migrateShortenerStore } from "./migrate.ts";

/** The click database's data directory is `$CASEBOOK_DATA/<this>`. */
export const CLICK_DATABASE_NAME = "url-shortener-clicks";
/**
 * Calls waiting on the click database's thread at once: the flusher's one batch, the rollup's
 * round, the edge ingester's chunk and the analytics reads in flight. Past it an analytics read
 * answers 503 SQL_UNAVAILABLE and a batch goes back to the buffer, as when the store is down.
 */
export const CLICK_DATABASE_MAX_PENDING = 256;

export interface ClickDatabase {
  readonly db: Database;
  /** Closes the click database when it is its own; a no-op when it is the service's. */
  close(): Promise<void>;
}

export interface ClickDatabaseOptions {
  /** The service's name: its schema's default (the click store's SQL names no schema). */
  system: string;
  /** The service's DATABASE_URL: set, the click log is in that database (`sameAs`). */
  databaseUrl: string | undefined;
  /** The service's schema, when configured. */
  schema?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
}

/** The click database: `undefined` on PostgreSQL (the service's own database is the click log's), else its own PGlite thread. */
export async function openClickDatabase(options: ClickDatabaseOptions): Promise<ClickDatabase | undefined> {
  if (options.databaseUrl !== undefined) return undefined;
  const clicks = await openDatabase({
    system: CLICK_DATABASE_NAME,
    env: options.env,
    schema: options.schema ?? schemaName(options.system),
    pgliteThread: { maxPending: CLICK_DATABASE_MAX_PENDING },
  });
  try {
    await migrateShortenerStore(clicks);
  } catch (error) {
    await clicks.close();
    throw error;
  }
  return { db: clicks, close: () => clicks.close() };
}
