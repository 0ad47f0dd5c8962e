/**
 * A batch of clicks as the click log's INSERT takes it (migrations/003_clicks.sql): one
 * parameter per column, each a PostgreSQL array literal (`{"a","b",NULL}`) made here — on the
 * click encoder's worker thread (workers/click-encoder.ts) — so the event loop hands the
 * driver ten strings instead of having it serialize tens of thousands of values (a tenth of
 * the redirect process's CPU with PGlite in the profile). The days the batch touches come
 * with it: their partitions must exist before the INSERT.
 *
 * @example
 * const batch = toClickBatch(columns); // { params: ["{\"2026-01-01T00:00:00.000Z\"}", …], daysMs: [1767225600000] }
 * await db.query(INSERT_CLICKS_SQL, batch.params);
 */
import type { ClickColumns } from "../domain/click-record.ts";

export interface ClickBatch {
  /** How many clicks the literals hold (the sum of their `click_count`s). */
  readonly count: number;
  /** How many rows: fewer than clicks when identical ones were folded (click-record.ts ClickEncoder). */
  readonly rows: number;
  /** The INSERT's ten parameters, in INSERT_CLICKS_SQL's order. */
  readonly params: readonly string[];
  /** The start (ms) of each UTC day some click falls on, each once. */
  readonly daysMs: readonly number[];
}

/**
 * The batch into the log and, in the same statement, its link clicks into the rollup's pending
 * rows (migrations/008_rollup_pending.sql): per hour, link, bot flag and visitor, summed.
 */
export const INSERT_CLICKS_SQL = `WITH added AS (
  INSERT INTO clicks (at, domain, code, status, referrer_host, ua_family, bot, visitor_hash, orphan, click_count)
  SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::int2[], $5::text[], $6::text[], $7::bool[],
                       $8::text[], $9::bool[], $10::int4[])
  RETURNING at, domain, code, bot, visitor_hash, orphan, click_count
)
INSERT INTO click_rollup_pending (hour, domain, code, bot, visitor_hash, click_count)
  SELECT date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', domain, code, bot, visitor_hash, sum(click_count)
    FROM added WHERE NOT orphan GROUP BY 1, 2, 3, 4, 5`;

/** A text[] literal: every element quoted, `"` and `\` escaped, null as NULL. */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) out += ",";
    out += value === null || value === undefined ? "NULL" : `"${value.replace(/["\\]/g, "\\$&")}"`;
  }
  return `${out}}`;
}

const plainLiteral = (values: readonly (number | boolean)[]): string =>
  `{${values.map((v) => (typeof v === "boolean" ? (v ? "t" : "f") : String(v))).join(",")}}`;

export function toClickBatch(columns: ClickColumns): ClickBatch {
  let count = 0;
  for (const n of columns.clicks) count += n;
  return {
    count,
    rows: columns.at.length,
    params: [
      textArrayLiteral(columns.at),
      textArrayLiteral(columns.domain),
      textArrayLiteral(columns.code),
      plainLiteral(columns.status),
      textArrayLiteral(columns.referrerHost),
      textArrayLiteral(columns.uaFamily),
      plainLiteral(columns.bot),
      textArrayLiteral(columns.visitorHash),
      plainLiteral(columns.orphan),
      plainLiteral(columns.clicks),
    ],
    daysMs: columns.daysMs,
  };
}
