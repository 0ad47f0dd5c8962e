/**
 * `Database` on PGlite: real PostgreSQL compiled to WASM, running inside this
 * process, with its data in a directory (or in memory for tests).
 *
 * PGlite is ONE connection. Its own `transaction()` holds a mutex from BEGIN to
 * COMMIT that every other query and transaction waits on, so transactions never
 * interleave: they run one after another, as if SERIALIZABLE, whatever isolation is
 * asked for. What that means for callers (row locks never contend, SKIP LOCKED never
 * skips, no statement timeout) is written in packages/infra/README.md, section sql.
 *
 * @example
 * const db = await openPgliteDatabase({ dataDir: "memory://" });
 * await db.exec("CREATE TABLE notes (id int8 PRIMARY KEY, body text NOT NULL)");
 * await db.transaction(async (tx) => {
 *   await tx.query("INSERT INTO notes VALUES ($1, $2)", [1n, "hello"]);
 * });
 * await db.close();
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { PGlite, type Results, type Transaction } from "@electric-sql/pglite";
import { cube } from "@electric-sql/pglite/contrib/cube";
import { acquireDataDirLock, type DataDirLock } from "./data-dir-lock.ts";
import { readInitdbSnapshot, saveInitdbSnapshot } from "./pglite-initdb-snapshot.ts";
import type { Database, Queryable, QueryOptions, QueryResult, TransactionOptions } from "./sql.ts";
import { isolationSql, preparedName } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";
import { DEFAULT_PING_TIMEOUT_MS, pingWithin } from "./sql-ping.ts";
import { quoteIdentifier } from "./sql-schema.ts";
import { pgliteParsers } from "./sql-values.ts";
import { TransactionGate } from "./transaction-gate.ts";

export const MEMORY_DATA_DIR = "memory://";

export interface PgliteDatabaseOptions {
  /** A directory (created if missing, kept across restarts), or `memory://` for a throwaway database. */
  dataDir: string;
  /** The session's `search_path`; nothing else is searched, so a missing schema fails loudly (3F000). */
  schema?: string;
  /** How long a call waits for the open transaction before SQL_TRANSACTION_NESTED (transaction-gate.ts; default 30 s). */
  transactionWaitMs?: number;
}

function resultOf<Row>(result: Results<Row>): QueryResult<Row> {
  // PGlite sets rowCount from the command tag ("INSERT 0 3", "SELECT 2"), absent for DDL.
  const rowCount = (result as { rowCount?: number }).rowCount;
  return { rows: result.rows, rowCount: rowCount ?? 0 };
}

/** After close(), PGlite throws a plain Error; report it like a lost server. */
function surfaced(err: unknown): unknown {
  return err instanceof Error && /PGlite is closed/.test(err.message)
    ? sqlErrors.create("SQL_UNAVAILABLE", { cause: err })
    : err;
}

class PgliteTransaction implements Queryable {
  #raw: Transaction;
  #open = true;

  constructor(raw: Transaction) {
    this.#raw = raw;
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    // Checked like pg's, then run unnamed: PGlite's API has no named statements (see QueryOptions).
    preparedName(options);
    this.#checkOpen();
    return resultOf(await this.#raw.query<Row>(text, params as unknown[] | undefined));
  }

  async exec(script: string): Promise<void> {
    this.#checkOpen();
    await this.#raw.exec(script);
  }

  end(): void {
    this.#open = false;
  }

  #checkOpen(): void {
    if (!this.#open) throw sqlErrors.create("SQL_TRANSACTION_CLOSED");
  }
}

class PgliteDatabase implements Database {
  readonly engine = "pglite" as const;
  readonly schema: string | undefined;
  #pglite: PGlite;
  #lock: DataDirLock | undefined;
  #closed = false;
  /** One transaction at a time; every other call held until it ends (a call from inside it would wait on itself). */
  readonly #gate: TransactionGate;

  constructor(pglite: PGlite, lock: DataDirLock | undefined, options: PgliteDatabaseOptions) {
    this.#pglite = pglite;
    this.#lock = lock;
    this.schema = options.schema;
    this.#gate = new TransactionGate(
      options.transactionWaitMs === undefined ? {} : { waitMs: options.transactionWaitMs },
    );
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    // Checked like pg's, then run unnamed: PGlite's API has no named statements (see QueryOptions).
    preparedName(options);
    try {
      return resultOf(
        await this.#gate.call(() => this.#pglite.query<Row>(text, params as unknown[] | undefined)),
      );
    } catch (err) {
      throw surfaced(err);
    }
  }

  async exec(script: string): Promise<void> {
    try {
      await this.#gate.call(() => this.#pglite.exec(script));
    } catch (err) {
      throw surfaced(err);
    }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    try {
      // PGlite's transaction(): BEGIN, the callback, COMMIT — or ROLLBACK and rethrow — under its mutex.
      return await this.#gate.transaction(() =>
        this.#pglite.transaction(async (raw) => {
          const tx = new PgliteTransaction(raw);
          try {
            if (options.isolation !== undefined) {
              await raw.query(`SET TRANSACTION ISOLATION LEVEL ${isolationSql[options.isolation]}`);
            }
            return await fn(tx);
          } finally {
            tx.end();
          }
        }),
      );
    } catch (err) {
      throw surfaced(err);
    }
  }

  ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<void> {
    return pingWithin(() => this.query("SELECT 1"), timeoutMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#gate.refuseAll(() =>
      sqlErrors.create("SQL_UNAVAILABLE", { detail: "The embedded database was closed." }),
    );
    try {
      await this.#pglite.close();
    } finally {
      this.#lock?.release();
    }
  }
}

/** Starts PGlite (a new directory: initdb, or its saved files), waits until it answers, and sets the session up. */
export async function openPgliteDatabase(options: PgliteDatabaseOptions): Promise<Database> {
  const inMemory = options.dataDir === MEMORY_DATA_DIR;
  const schemaSql =
    options.schema === undefined ? "" : `SET search_path TO ${quoteIdentifier(options.schema)};`;
  if (!inMemory) mkdirSync(dirname(options.dataDir), { recursive: true });
  const lock = inMemory ? undefined : acquireDataDirLock(options.dataDir);
  let pglite: PGlite | undefined;
  try {
    // A new cluster (in memory, or a data directory initdb has not written yet) starts from the
    // saved initdb files when there are some (see pglite-initdb-snapshot.ts): the same new
    // cluster, a third of the start-up cost. A directory with a cluster in it resumes it.
    const fresh = inMemory || !existsSync(join(options.dataDir, "PG_VERSION"));
    const snapshot = fresh ? await readInitdbSnapshot() : undefined;
    pglite = new PGlite({
      dataDir: options.dataDir,
      ...(snapshot === undefined ? {} : { loadDataDir: snapshot }),
      parsers: pgliteParsers,
      // Sync to the filesystem after every statement: a crash loses nothing that was committed.
      relaxedDurability: false,
      debug: 0,
      // Contrib extensions PostgreSQL ships too (Debian's postgresql-15 has them), so a
      // migration's CREATE EXTENSION runs on both engines; loaded only when created.
      extensions: { cube },
    });
    await pglite.waitReady;
    if (fresh && snapshot === undefined) await saveInitdbSnapshot(pglite);
    await pglite.exec(`SET TimeZone = 'UTC'; ${schemaSql}`);
    return new PgliteDatabase(pglite, lock, options);
  } catch (err) {
    await pglite?.close().catch(() => {});
    lock?.release();
    throw err;
  }
}
