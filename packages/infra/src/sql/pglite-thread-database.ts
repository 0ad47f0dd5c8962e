/**
 * `Database` on a PGlite that runs on a worker thread of its own (pglite-thread-worker.ts).
 * PGlite executes every statement — parse, plan, WASM, the file writes — on the thread that
 * calls it; a store written on a hot path (url-shortener's click log: an INSERT per batch of
 * thousands of rows) then costs the thread that answers requests. Here that thread only posts
 * the statement and its parameters and receives the rows: the engine's work is the worker's.
 *
 * The same semantics as pglite-database.ts (one connection; transactions one after another,
 * every other call held, unsent, while one is open; `SQL_TRANSACTION_NESTED` for a call from
 * inside its own transaction, once it has waited `transactionWaitMs`: transaction-gate.ts),
 * with what a thread boundary changes: rows and parameters cross by structured
 * clone (a `Buffer` parameter or `bytea` value arrives as a `Uint8Array`), and an engine error
 * keeps its name, message and own fields (`code` = SQLSTATE, `SQL_…` errors rebuilt as
 * `sqlErrors`) but not its stack. Bounds: at most `maxPending` requests wait for an answer
 * (past it a call is refused `SQL_UNAVAILABLE` at once); a worker that dies fails every
 * waiting call and every later one with `SQL_UNAVAILABLE` — it is not restarted (its data
 * directory's lock is this process's; a restart is a process restart).
 *
 * @example
 * const db = await openPgliteThreadDatabase({ dataDir: "/srv/data/url-shortener-clicks", maxPending: 1_000 });
 * await db.query("INSERT INTO clicks SELECT * FROM unnest($1::text[])", [literal]);
 * await db.close();
 */
import { Worker } from "node:worker_threads";
import type { ThreadAnswer, ThreadError, ThreadRequest } from "./pglite-thread-protocol.ts";
import type { Database, Queryable, QueryOptions, QueryResult, TransactionOptions } from "./sql.ts";
import { preparedName } from "./sql.ts";
import { type SqlErrorCode, sqlErrors } from "./sql-errors.ts";
import { DEFAULT_PING_TIMEOUT_MS, pingWithin } from "./sql-ping.ts";
import { TransactionGate } from "./transaction-gate.ts";

export interface PgliteThreadDatabaseOptions {
  /** A directory (created if missing, kept across restarts), or `memory://`. */
  dataDir: string;
  /** The session's `search_path`. */
  schema?: string;
  /** Requests waiting for an answer at once; past it a call is refused with SQL_UNAVAILABLE. */
  maxPending: number;
  /** How long a call waits for the open transaction before SQL_TRANSACTION_NESTED (transaction-gate.ts; default 30 s). */
  transactionWaitMs?: number;
}

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

// Distributive Omit: each request shape without its id.
type Unnumbered<T> = T extends unknown ? Omit<T, "id"> : never;

const workerEntry = new URL("./pglite-thread-worker.ts", import.meta.url);

/** The worker's error as the caller would have got it in-process (minus the stack). */
function rebuilt(error: ThreadError): Error {
  const code = error.props.code;
  if (typeof code === "string" && code in sqlErrors.specs) {
    const fields = error.props.fields as Record<string, unknown> | undefined;
    return sqlErrors.create(code as SqlErrorCode, { detail: error.message, ...(fields ? { fields } : {}) });
  }
  const out = new Error(error.message);
  out.name = error.name;
  Object.assign(out, error.props);
  return out;
}

class ThreadQueryable implements Queryable {
  readonly #owner: PgliteThreadDatabase;
  readonly #txId: number | undefined;
  #open = true;

  constructor(owner: PgliteThreadDatabase, txId: number | undefined) {
    this.#owner = owner;
    this.#txId = txId;
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    preparedName(options);
    this.#checkOpen();
    return (await this.#owner.send({ op: "query", text, params, txId: this.#txId })) as QueryResult<Row>;
  }

  async exec(script: string): Promise<void> {
    this.#checkOpen();
    await this.#owner.send({ op: "exec", script, txId: this.#txId });
  }

  end(): void {
    this.#open = false;
  }

  #checkOpen(): void {
    if (!this.#open) throw sqlErrors.create("SQL_TRANSACTION_CLOSED");
  }
}

class PgliteThreadDatabase implements Database {
  readonly engine = "pglite" as const;
  readonly schema: string | undefined;
  readonly #worker: Worker;
  readonly #maxPending: number;
  readonly #waiting = new Map<number, Waiting>();
  /** One transaction at a time; every other call held until it ends. */
  readonly #gate: TransactionGate;
  readonly #outside: ThreadQueryable;
  #nextId = 1;
  #failure: Error | undefined;
  #closed: Promise<void> | undefined;

  constructor(worker: Worker, options: PgliteThreadDatabaseOptions) {
    this.#worker = worker;
    this.#maxPending = options.maxPending;
    this.#gate = new TransactionGate(
      options.transactionWaitMs === undefined ? {} : { waitMs: options.transactionWaitMs },
    );
    this.schema = options.schema;
    this.#outside = new ThreadQueryable(this, undefined);
    worker.on("message", (message: ThreadAnswer) => this.#answered(message));
    worker.on("error", (error) => this.#fail(error));
    worker.on("exit", (code) => this.#fail(new Error(`the PGlite thread exited with code ${code}`)));
    // Idle, the thread must not keep the process alive; a call out holds it (see send).
    worker.unref();
  }

  /** One request to the worker; the answer's result, or its error rebuilt. */
  send(request: Unnumbered<ThreadRequest>): Promise<unknown> {
    if (this.#failure !== undefined) {
      return Promise.reject(sqlErrors.create("SQL_UNAVAILABLE", { cause: this.#failure }));
    }
    if (this.#waiting.size >= this.#maxPending) {
      const detail = `The embedded database's thread has ${this.#waiting.size} requests waiting; retry shortly.`;
      return Promise.reject(sqlErrors.create("SQL_UNAVAILABLE", { detail }));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#waiting.size === 0) this.#worker.ref();
      this.#waiting.set(id, { resolve, reject });
      this.#worker.postMessage({ ...request, id } as ThreadRequest);
    });
  }

  #answered(message: ThreadAnswer): void {
    const waiting = this.#waiting.get(message.id);
    if (waiting === undefined) return;
    this.#waiting.delete(message.id);
    if (this.#waiting.size === 0) this.#worker.unref();
    if ("error" in message) waiting.reject(rebuilt(message.error));
    else waiting.resolve(message.result);
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const waiting of this.#waiting.values()) {
      waiting.reject(sqlErrors.create("SQL_UNAVAILABLE", { cause: error }));
    }
    this.#waiting.clear();
    this.#gate.refuseAll(() => sqlErrors.create("SQL_UNAVAILABLE", { cause: error }));
  }

  query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    return this.#gate.call(() => this.#outside.query<Row>(text, params, options));
  }

  exec(script: string): Promise<void> {
    return this.#gate.call(() => this.#outside.exec(script));
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.#gate.transaction(async () => {
      const txId = this.#nextId;
      await this.send({ op: "begin", isolation: options.isolation });
      const tx = new ThreadQueryable(this, txId);
      let result: T;
      try {
        result = await fn(tx);
      } catch (error) {
        tx.end();
        await this.send({ op: "end", txId, commit: false }).catch(() => {});
        throw error;
      }
      tx.end();
      await this.send({ op: "end", txId, commit: true });
      return result;
    });
  }

  ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<void> {
    return pingWithin(() => this.query("SELECT 1"), timeoutMs);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#failure === undefined) await this.send({ op: "close" }).catch(() => {});
      this.#failure ??= new Error("closed");
      await this.#worker.terminate();
    })();
    return this.#closed;
  }
}

/** Starts the worker and its PGlite (initdb or the saved files), and waits until it answers. */
export async function openPgliteThreadDatabase(options: PgliteThreadDatabaseOptions): Promise<Database> {
  if (!Number.isInteger(options.maxPending) || options.maxPending < 1) {
    throw new RangeError(`maxPending ${options.maxPending} must be an integer >= 1`);
  }
  const worker = new Worker(workerEntry, {
    workerData: {
      dataDir: options.dataDir,
      ...(options.schema === undefined ? {} : { schema: options.schema }),
    },
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number) =>
        reject(new Error(`the PGlite thread exited with code ${code} while starting`));
      worker.once("error", reject);
      worker.once("exit", onExit);
      worker.once("message", (message: ThreadAnswer) => {
        worker.off("error", reject);
        worker.off("exit", onExit);
        if ("error" in message) reject(rebuilt(message.error));
        else resolve();
      });
    });
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return new PgliteThreadDatabase(worker, options);
}
