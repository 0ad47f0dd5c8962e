/**
 * `Database` on a real PostgreSQL server, through a `pg.Pool` whose every option is
 * set here on purpose (driver defaults change under you, and some are unbounded:
 * `pg`'s default statement timeout is "forever").
 *
 * Engine errors keep their SQLSTATE (`err.code === "23505"`); losing the server —
 * refused connection, connect timeout, dropped socket, admin shutdown, too many
 * connections — becomes `SQL_UNAVAILABLE` with the driver error as `cause`.
 *
 * @example
 * const db = openPgDatabase({ url: "postgres://app@db:5432/casebook", schema: "payments", applicationName: "casebook-payments" });
 * const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM ledger_entries WHERE account_id = $1", [id]);
 * await db.close();
 */
import pg from "pg";
import { readWithin } from "./pg-read.ts";
import type { Database, Queryable, QueryOptions, QueryResult, TransactionOptions } from "./sql.ts";
import { isolationSql, preparedName } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";
import { DEFAULT_PING_TIMEOUT_MS, pingWithin } from "./sql-ping.ts";
import { quoteIdentifier } from "./sql-schema.ts";
import { SqlState, sqlState } from "./sql-state.ts";
import { pgParams, pgTypesWithBigint } from "./sql-values.ts";
import { StatementNames } from "./statement-names.ts";

export interface PgDatabaseOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** Every session's `search_path`; nothing else is searched, so a missing schema fails loudly (3F000). */
  schema?: string;
  /** Shown in `pg_stat_activity`, so an operator can tell systems apart. */
  applicationName: string;
  /** Pool size: connections held at most. Default 10. */
  maxConnections?: number;
  /** Bound on opening a connection AND on waiting for a free one from a full pool. Default 5 000. */
  connectTimeoutMs?: number;
  /** An idle connection is closed after this long. Default 30 000. */
  idleTimeoutMs?: number;
  /** Server-side `statement_timeout`. Default 30 000; 0 turns it off (don't). */
  statementTimeoutMs?: number;
  /** Server-side `idle_in_transaction_session_timeout`: a stuck caller can't hold locks forever. Default 60 000. */
  idleInTransactionTimeoutMs?: number;
  /**
   * Parameterized statements prepared automatically, named by their text (statement-names.ts):
   * the first this many distinct texts (named or not). Each connection then parses and plans such
   * a statement once.
   * Texts that return `*` stay unnamed. Default 0: only statements given a `name` are prepared.
   */
  preparedStatements?: number;
  /**
   * Called when an IDLE pooled connection dies (server restart, network cut). The pool
   * has already dropped it; the next query reconnects. Default: ignore.
   */
  onIdleConnectionError?: (err: Error) => void;
}

const DEFAULTS = {
  maxConnections: 10,
  connectTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: 30_000,
  idleInTransactionTimeoutMs: 60_000,
};
/** Client-side backstop past the server's statement timeout, for a link that went silent. */
const QUERY_TIMEOUT_GRACE_MS = 5_000;

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);
/** Server states meaning "no usable session": connection exceptions, shutdown, startup, too many clients. */
const CONNECTION_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/**
 * SQL_UNAVAILABLE for a link lost while COMMIT was on its way: the server may or may not have
 * committed, and no one can tell until it answers again — `fields.commitOutcome: "unknown"`
 * says so, so a caller retries with its idempotency key instead of reading "not stored".
 */
function commitInDoubt(cause: unknown): Error {
  return sqlErrors.create("SQL_UNAVAILABLE", {
    detail: "The database link broke while committing: the transaction may or may not have committed.",
    fields: { commitOutcome: "unknown" },
    cause,
  });
}

/** `pg` raises these without a code. */
const CONNECTION_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|connection error|Client was closed|Cannot use a pool after calling end/i;

/** True when `err` means the server (or the link to it) is gone rather than the statement being wrong. */
export function isConnectionLoss(err: unknown): boolean {
  const state = sqlState(err);
  if (state !== undefined) return state.startsWith("08") || CONNECTION_SQLSTATES.has(state);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_CODES.has(code)) return true;
  return CONNECTION_MESSAGE.test(err.message);
}

/**
 * What callers see: losing the engine, and the server giving up on a statement (57014:
 * `statement_timeout`, e.g. a lock wait behind a stalled transaction), are SQL_UNAVAILABLE —
 * "did not answer in time", a 503 to retry, like the driver's own read timeout; every other
 * engine error keeps its SQLSTATE for the caller to branch on.
 */
function surfaced(err: unknown): unknown {
  if (isConnectionLoss(err)) return sqlErrors.create("SQL_UNAVAILABLE", { cause: err });
  if (sqlState(err) === SqlState.queryCanceled) {
    return sqlErrors.create("SQL_UNAVAILABLE", {
      detail: "The database gave up on a statement after statement_timeout; retry shortly.",
      cause: err,
    });
  }
  return err;
}

/**
 * `pg`'s query config: with `name` (the caller's, else the text's derived one), a named prepared
 * statement, parsed once per connection.
 */
function queryConfig(
  names: StatementNames,
  text: string,
  params: readonly unknown[] | undefined,
  options: QueryOptions | undefined,
) {
  const name = preparedName(options) ?? names.nameOf(text, params?.length ?? 0);
  return { text, values: pgParams(params), ...(name === undefined ? {} : { name }) };
}

function resultOf<Row>(result: pg.QueryResult): QueryResult<Row> {
  return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
}

/** The `tx` a callback gets: refuses use after its transaction ended, when the client is back in the pool. */
class PgTransaction implements Queryable {
  #client: pg.PoolClient;
  readonly #names: StatementNames;
  readonly #readTimeoutMs: number;
  #open = true;

  constructor(client: pg.PoolClient, names: StatementNames, readTimeoutMs: number) {
    this.#client = client;
    this.#names = names;
    this.#readTimeoutMs = readTimeoutMs;
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    this.#checkOpen();
    const config = queryConfig(this.#names, text, params, options);
    try {
      return resultOf<Row>(await readWithin(this.#client, config, this.#readTimeoutMs));
    } catch (err) {
      throw surfaced(err);
    }
  }

  async exec(script: string): Promise<void> {
    this.#checkOpen();
    try {
      await readWithin(this.#client, script, this.#readTimeoutMs);
    } catch (err) {
      throw surfaced(err);
    }
  }

  end(): void {
    this.#open = false;
  }

  #checkOpen(): void {
    if (!this.#open) throw sqlErrors.create("SQL_TRANSACTION_CLOSED");
  }
}

class PgDatabase implements Database {
  readonly engine = "postgres" as const;
  readonly schema: string | undefined;
  #pool: pg.Pool;
  readonly #names: StatementNames;
  /** The client-side backstop on every statement (`pg-read.ts`); 0: none. */
  readonly #readTimeoutMs: number;
  #closed = false;

  constructor(pool: pg.Pool, schema: string | undefined, names: StatementNames, readTimeoutMs: number) {
    this.#pool = pool;
    this.schema = schema;
    this.#names = names;
    this.#readTimeoutMs = readTimeoutMs;
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>> {
    return resultOf<Row>(await this.#read(queryConfig(this.#names, text, params, options)));
  }

  async exec(script: string): Promise<void> {
    await this.#read(script);
  }

  /**
   * One statement on a pooled connection, as `pool.query` sends it but through `readWithin`
   * (`pg-read.ts`): a connection whose link failed or went silent is destroyed, not pooled again.
   */
  async #read(statement: string | pg.QueryConfig): Promise<pg.QueryResult> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw surfaced(err);
    }
    // pg-pool stops listening to a checked-out client's "error" event: without this listener a
    // link reset while the statement runs would crash the process (see transaction()).
    let broken: Error | undefined;
    const onLinkError = (err: Error) => {
      broken ??= err;
    };
    client.on("error", onLinkError);
    try {
      return await readWithin(client, statement, this.#readTimeoutMs);
    } catch (err) {
      if (isConnectionLoss(err)) broken ??= err instanceof Error ? err : new Error(String(err));
      throw surfaced(err);
    } finally {
      client.off("error", onLinkError);
      client.release(broken);
    }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw surfaced(err);
    }
    const tx = new PgTransaction(client, this.#names, this.#readTimeoutMs);
    const read = (statement: string) => readWithin(client, statement, this.#readTimeoutMs);
    // Passing an error to release() destroys the client instead of pooling it: for a link that
    // failed, or a ROLLBACK that did. pg-pool stops listening to a client's "error" event while it
    // is checked out, so without this listener a reset link would crash the process.
    let broken: Error | undefined;
    const onLinkError = (err: Error) => {
      broken ??= err;
    };
    client.on("error", onLinkError);
    let committing = false;
    try {
      const isolation =
        options.isolation === undefined ? "" : ` ISOLATION LEVEL ${isolationSql[options.isolation]}`;
      await read(`BEGIN${isolation}`);
      const result = await fn(tx);
      committing = true;
      await read("COMMIT");
      return result;
    } catch (err) {
      if (broken === undefined && !isConnectionLoss(err)) {
        // After a failed COMMIT the server has already ended the transaction; this ROLLBACK is then a no-op.
        const rollbackErr = await read("ROLLBACK").then(
          () => undefined,
          (failed: Error) => failed,
        );
        broken = rollbackErr ?? broken;
      } else {
        // A dead or timed-out link: a ROLLBACK would queue behind the stuck statement for another
        // timeout. Destroying the client ends the session, and the server rolls back with it.
        broken ??= err instanceof Error ? err : new Error(String(err));
        // The link went with the COMMIT on its way: the server may have committed.
        if (committing) throw commitInDoubt(err);
      }
      throw surfaced(err);
    } finally {
      client.off("error", onLinkError);
      tx.end();
      client.release(broken);
    }
  }

  ping(timeoutMs = DEFAULT_PING_TIMEOUT_MS): Promise<void> {
    return pingWithin(() => this.query("SELECT 1"), timeoutMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}

/** The session settings sent at connect: UTC everywhere, and the system's schema alone on the search path. */
function startupOptions(schema: string | undefined): string {
  const searchPath = schema === undefined ? "" : ` -c search_path=${quoteIdentifier(schema)}`;
  return `-c TimeZone=UTC${searchPath}`;
}

/** Opens a pool lazily: no connection is made until the first query (use `ping()` to check readiness). */
export function openPgDatabase(options: PgDatabaseOptions): Database {
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  const pool = new pg.Pool({
    connectionString: options.url,
    application_name: options.applicationName,
    max: settings.maxConnections,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    idleTimeoutMillis: settings.idleTimeoutMs,
    statement_timeout: settings.statementTimeoutMs,
    // No query_timeout: pg's wraps every statement's callback in a closure born in the old
    // generation; the same backstop is readWithin's (pg-read.ts).
    idle_in_transaction_session_timeout: settings.idleInTransactionTimeoutMs,
    maxLifetimeSeconds: 0,
    allowExitOnIdle: false,
    keepAlive: true,
    options: startupOptions(options.schema),
    types: pgTypesWithBigint,
  });
  // Without a listener an idle client's error event would crash the process.
  pool.on("error", options.onIdleConnectionError ?? (() => {}));
  const readTimeoutMs =
    settings.statementTimeoutMs === 0 ? 0 : settings.statementTimeoutMs + QUERY_TIMEOUT_GRACE_MS;
  return new PgDatabase(
    pool,
    options.schema,
    new StatementNames(options.preparedStatements ?? 0),
    readTimeoutMs,
  );
}

/** Drops keys set to undefined so they don't override the defaults. */
function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
