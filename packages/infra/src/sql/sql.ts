/**
 * The one SQL interface every Casebook store talks to. Two engines implement it:
 * PostgreSQL through a `pg.Pool` (`pg-database.ts`) and PGlite, real PostgreSQL
 * compiled to WASM, embedded in the process (`pglite-database.ts`).
 * `openDatabase` (`open-database.ts`) picks one from the configuration.
 *
 * Values, identical on both engines (the contract suite checks each):
 * - parameters are positional, `$1..$n`;
 * - `int8` (bigint, `count(*)`, `sum(int)`) comes back as a JS `bigint`, `int8[]` as
 *   `bigint[]`: money is kept in integer minor units and must never pass through a
 *   float. `int2`/`int4` come back as `number`;
 * - `numeric` comes back as a `string` (exact decimal; parse it with what you need);
 * - `json`/`jsonb` come back parsed. As a parameter, pass an object or a JSON string;
 *   a top-level ARRAY must be passed as `JSON.stringify(array)`, because `pg` sends a
 *   JS array as a Postgres array literal. `bigint`s inside an object are sent as strings;
 * - `timestamptz` comes back as a `Date`; a `Date` parameter is an instant. Sessions
 *   run with `TimeZone=UTC`. Prefer `timestamptz` over `timestamp`.
 *
 * Errors from the engine keep their SQLSTATE in `err.code` ('23505', '40001', …);
 * branch with the predicates of `sql-state.ts`.
 *
 * @example
 * const db = await openDatabase({ system: "payments" });
 * await db.transaction(async (tx) => {
 *   const { rows } = await tx.query<{ balance: bigint }>("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", [id]);
 *   await tx.query("UPDATE accounts SET balance = $1 WHERE id = $2", [rows[0]!.balance - amount, id]);
 * }, { isolation: "read committed" });
 */

import { sqlErrors } from "./sql-errors.ts";

/** Which engine is underneath; stores use it only to explain, never to change semantics. */
export type Engine = "postgres" | "pglite";

export type IsolationLevel = "read committed" | "repeatable read" | "serializable";

export interface QueryResult<Row> {
  rows: Row[];
  /** Rows inserted/updated/deleted/merged/copied, or returned by a SELECT; 0 for other commands. */
  rowCount: number;
}

/** How one statement runs. */
export interface QueryOptions {
  /**
   * A prepared statement's name (`ledger_write`): on PostgreSQL (`pg`) the statement is parsed
   * and planned once per connection under this name, and later calls send only Bind/Execute
   * with the parameters — no parse, no plan, a smaller message. One name, one text: reusing a
   * name for another text fails. Lowercase letters, digits and `_`, 1..63 characters.
   * On PGlite the name is checked and the statement runs unnamed: PGlite (0.5) has no named
   * statements in its API and no network between the caller and the engine, so what a named
   * statement saves there is only the parse and plan, in the same process (see pglite-database.ts).
   */
  name?: string;
}

/** What `QueryOptions.name` may be. */
export const PREPARED_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** `options.name` checked against PREPARED_NAME (SQL_NAME_INVALID otherwise), or undefined. */
export function preparedName(options: QueryOptions | undefined): string | undefined {
  const name = options?.name;
  if (name === undefined) return undefined;
  if (!PREPARED_NAME.test(name)) {
    const detail = "A prepared statement's name is lowercase letters, digits and '_', 1..63 characters.";
    throw sqlErrors.create("SQL_NAME_INVALID", { detail, fields: { name } });
  }
  return name;
}

/** What a query can run on: the database itself, or the transaction handed to a callback. */
export interface Queryable {
  /** One statement with `$1..$n` parameters; `options.name` makes it a prepared statement. */
  query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>>;
  /**
   * A script of one or more statements without parameters (simple query protocol):
   * migrations, schema set-up. Never interpolate input into it.
   */
  exec(script: string): Promise<void>;
}

export interface TransactionOptions {
  /** Defaults to the server's default, which Casebook leaves at 'read committed'. */
  isolation?: IsolationLevel;
}

export interface Database extends Queryable {
  readonly engine: Engine;
  /** The schema every session's `search_path` names, when one was set (one schema per system). */
  readonly schema: string | undefined;
  /**
   * Runs `fn` in a transaction: COMMIT when it resolves, ROLLBACK when it throws, and the
   * original error is rethrown. A COMMIT can itself fail (a deferred constraint, a
   * serialization failure); that error is thrown too. A link lost while COMMIT was on its way
   * is SQL_UNAVAILABLE with `fields.commitOutcome: "unknown"`: it may have committed. Inside `fn` use only `tx`: on
   * PGlite, calling the database itself from inside a transaction is refused
   * (`SQL_TRANSACTION_NESTED`; on its own thread once it has waited `transactionWaitMs`), because
   * its single connection would wait on itself.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the engine answers `SELECT 1` within `timeoutMs`; rejects with `SQL_UNAVAILABLE` otherwise. */
  ping(timeoutMs?: number): Promise<void>;
  /** Closes the pool / the embedded engine; idempotent. */
  close(): Promise<void>;
}

export const isolationSql: Readonly<Record<IsolationLevel, string>> = {
  "read committed": "READ COMMITTED",
  "repeatable read": "REPEATABLE READ",
  serializable: "SERIALIZABLE",
};
