/**
 * One statement on a checked-out `pg` client, with a client-side read timeout, and without a
 * closure born in the old generation for each statement.
 *
 * `pg` 8's `Client#query` stores its callback on the `Query` as a function literal assigned to a
 * property — `query.callback = (err, res) => …` — both when it returns a promise and when its
 * `query_timeout` wraps the caller's callback. V8's parser marks such a literal "pretenured" and
 * allocates it in the old generation (see `redis/command-promise.ts` for the same in ioredis),
 * where the scavenger counts it alive: through its context it keeps the query, its rows, its
 * timer and the caller's promise until the next mark-compact. A server with one pool query per
 * request at 2,500/s (Node 24, pg 8.23): ~1.9 MB promoted per scavenge and scavenges of ~5 ms
 * with the pool's `query_timeout`, ~0.02 MB and ~0.65 ms without it.
 *
 * So `pg-database.ts` opens its pool without `query_timeout` and sends every statement through
 * `readWithin`, whose callback is made by a call (young, like every other per-statement object)
 * and which keeps the same backstop: no answer within `timeoutMs` rejects with `pg`'s own
 * "Query read timeout" (a connection loss to `isConnectionLoss`), and the caller then destroys
 * the client (`release(err)`), as `pg` and `pg-pool` do after their read timeout.
 *
 * @example
 * const client = await pool.connect();
 * const { rows } = await readWithin(client, { text: "SELECT $1::int AS n", values: [1] }, 35_000);
 * client.release();
 */
import type pg from "pg";

/** `pg`'s own message for its read timeout, so that a timed-out statement reads as a lost link. */
const READ_TIMEOUT_MESSAGE = "Query read timeout";

type Settle = (err: Error | undefined, result: pg.QueryResult) => void;

/** The statement's callback, returned by a call rather than assigned as a literal: born young. */
function settlerOf(
  resolve: (result: pg.QueryResult) => void,
  reject: (err: Error) => void,
  timer: NodeJS.Timeout | undefined,
): Settle {
  return (err, result) => {
    clearTimeout(timer);
    if (err) reject(err);
    else resolve(result);
  };
}

function timedOut(reject: (err: Error) => void): void {
  reject(new Error(READ_TIMEOUT_MESSAGE));
}

/**
 * Sends `statement` on `client` and resolves with its result; rejects with the engine's error, or
 * with "Query read timeout" when nothing came back within `timeoutMs` (0: no bound). After that
 * rejection the client's link is in an unknown state: release it with the error (destroyed).
 */
export function readWithin(
  client: pg.ClientBase,
  statement: string | pg.QueryConfig,
  timeoutMs: number,
): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const timer = timeoutMs > 0 ? setTimeout(timedOut, timeoutMs, reject) : undefined;
    try {
      client.query(statement, settlerOf(resolve, reject, timer));
    } catch (err) {
      clearTimeout(timer);
      throw err;
    }
  });
}
