/**
 * The counts the service watches, as SQL (the only place that speaks it is store/): the saga
 * backlog and the open reconciliation exceptions that /metrics scrapes, and whether a day's
 * reconciliation run is recorded (the daily job's check). Each count is bounded by a LIMIT, so
 * a scrape's cost stays bounded however large a backlog grows.
 *
 * @example
 * const backlog = await countSagaBacklog(db, { nowMs: clock.nowMs() }); // ≤ DEFAULT_BACKLOG_MAX_COUNT
 * if (!(await reconciliationRunExists(db, "2026-01-01"))) await reconcileDate(deps, "2026-01-01", …);
 */
import type { Queryable } from "@casebook/infra/sql/sql";

/** The backlog count stops here: a scrape never counts more rows than this. */
export const DEFAULT_BACKLOG_MAX_COUNT = 100_000;

/**
 * Unfinished sagas that are due or held by a worker's lease at `nowMs`, counted up to `maxCount`
 * (the LIMIT keeps a scrape's cost bounded however large a backlog grows).
 */
export async function countSagaBacklog(
  q: Queryable,
  options: { nowMs: number; maxCount?: number },
): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int4 AS n FROM (
       SELECT 1 FROM payments
        WHERE step <> 'done' AND (next_attempt_at <= $1 OR lease_expires_at > $1)
        LIMIT $2) backlog`,
    [new Date(options.nowMs), options.maxCount ?? DEFAULT_BACKLOG_MAX_COUNT],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Reconciliation exceptions still open, counted up to `maxCount` (on the partial index of open ones). */
export async function countOpenExceptions(
  q: Queryable,
  options: { maxCount?: number } = {},
): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int4 AS n FROM (
       SELECT 1 FROM reconciliation_exceptions WHERE status = 'open' LIMIT $1) open_exceptions`,
    [options.maxCount ?? DEFAULT_BACKLOG_MAX_COUNT],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Whether the reconciliation of `date` (YYYY-MM-DD, UTC) has a recorded run. */
export async function reconciliationRunExists(q: Queryable, date: string): Promise<boolean> {
  const done = await q.query("SELECT 1 FROM reconciliation_runs WHERE settlement_date = $1::date LIMIT 1", [
    date,
  ]);
  return done.rowCount > 0;
}
