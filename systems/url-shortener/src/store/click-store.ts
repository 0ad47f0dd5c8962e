/**
 * The click log in SQL (migrations/003_clicks.sql): an append-only table partitioned by day.
 *
 * - `append`/`appendBatch`: one INSERT for a whole batch (unnest of arrays), after making sure each day's
 *   partition exists (CREATE TABLE IF NOT EXISTS … PARTITION OF, remembered per process). A row
 *   stands for `click_count` identical clicks (the flusher folds them: domain/click-record.ts
 *   ClickEncoder), so every count below is a sum of `click_count`, never a count of rows.
 * - `rollup`: adds the clicks appended since the last round (the pending rows the append wrote
 *   beside the log, migrations/008_rollup_pending.sql) to their hourly and daily buckets —
 *   work in proportion to the new clicks, never a rescan of the day; each click added once, so
 *   the rollup agrees with the raw log, also with two replicas rolling up at once.
 * - `series`, `totals`, `topReferrers`, `orphans`: the analytics reads.
 *
 * @example
 * const clicks = new ClickStore(db);
 * await clicks.append(records);
 * await clicks.rollup(Date.now());
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { checkIdentifier } from "@casebook/infra/sql/sql-schema";
import { type ClickRecord, emptyClickColumns, pushClickRecord } from "../domain/click-record.ts";
import { type ClickBatch, INSERT_CLICKS_SQL, toClickBatch } from "./click-batch.ts";

const DAY_MS = 86_400_000;
/** Pending rows one rollup round takes at most (a backlog drains in rounds of this). */
export const ROLLUP_MAX_ROWS = 50_000;
/** How long a bucket's counted visitors are kept (migrations/008_rollup_pending.sql). */
export const VISITOR_RETENTION_MS = 2 * DAY_MS;

const ROLLUP_SQL = `WITH taken AS (
  DELETE FROM click_rollup_pending
   WHERE ctid IN (SELECT ctid FROM click_rollup_pending LIMIT $1)
  RETURNING hour, domain, code, bot, visitor_hash, click_count
), by_bucket AS (
  SELECT domain, code, g.granularity,
         date_trunc(g.granularity, hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket_start,
         bot, visitor_hash, click_count
    FROM taken CROSS JOIN (VALUES ('hour'), ('day')) AS g (granularity)
), new_visitors AS (
  INSERT INTO click_rollup_visitors (domain, code, granularity, bucket_start, visitor_hash)
  SELECT DISTINCT domain, code, granularity, bucket_start, visitor_hash FROM by_bucket WHERE NOT bot
  ON CONFLICT DO NOTHING
  RETURNING domain, code, granularity, bucket_start
), fresh AS (
  SELECT domain, code, granularity, bucket_start, count(*) AS visitors FROM new_visitors GROUP BY 1, 2, 3, 4
), sums AS (
  SELECT domain, code, granularity, bucket_start,
         coalesce(sum(click_count) FILTER (WHERE NOT bot), 0) AS clicks,
         coalesce(sum(click_count) FILTER (WHERE bot), 0) AS bot_clicks
    FROM by_bucket GROUP BY 1, 2, 3, 4
), added AS (
  INSERT INTO click_rollups (domain, code, granularity, bucket_start, clicks, bot_clicks, visitors)
  SELECT s.domain, s.code, s.granularity, s.bucket_start, s.clicks, s.bot_clicks, coalesce(f.visitors, 0)
    FROM sums s LEFT JOIN fresh f USING (domain, code, granularity, bucket_start)
  ON CONFLICT (domain, code, granularity, bucket_start) DO UPDATE
    SET clicks = click_rollups.clicks + EXCLUDED.clicks,
        bot_clicks = click_rollups.bot_clicks + EXCLUDED.bot_clicks,
        visitors = click_rollups.visitors + EXCLUDED.visitors
)
SELECT count(*)::int AS taken FROM taken`;

export type Granularity = "hour" | "day";
export type OrphanKind = "base" | "unknown" | "gone";

export interface SeriesPoint {
  bucketStart: Date;
  clicks: number;
  botClicks: number;
  visitors: number;
}

function partitionName(dayMs: number): string {
  return checkIdentifier(`clicks_${new Date(dayMs).toISOString().slice(0, 10).replaceAll("-", "")}`);
}

export class ClickStore {
  readonly #db: Queryable;
  readonly #partitions = new Set<number>();

  constructor(db: Queryable) {
    this.#db = db;
  }

  async #ensurePartition(dayMs: number): Promise<void> {
    if (this.#partitions.has(dayMs)) return;
    const from = new Date(dayMs).toISOString();
    const to = new Date(dayMs + DAY_MS).toISOString();
    // Identifiers and ISO dates only, made here: no input reaches this text.
    await this.#db.exec(
      `CREATE TABLE IF NOT EXISTS ${partitionName(dayMs)} PARTITION OF clicks FOR VALUES FROM ('${from}') TO ('${to}')`,
    );
    this.#partitions.add(dayMs);
  }

  /** The partitions that exist, by name: clicks_YYYYMMDD. */
  async partitions(): Promise<string[]> {
    const { rows } = await this.#db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'clicks'::regclass ORDER BY 1`,
    );
    return rows.map((row) => row.name);
  }

  async append(records: readonly ClickRecord[]): Promise<void> {
    const columns = emptyClickColumns();
    for (const record of records) pushClickRecord(columns, record);
    await this.appendBatch(toClickBatch(columns));
  }

  /** One INSERT of a batch already encoded (the flusher's, made off the event loop: click-batch.ts). */
  async appendBatch(batch: ClickBatch): Promise<void> {
    if (batch.count === 0) return;
    for (const day of batch.daysMs) await this.#ensurePartition(day);
    await this.#db.query(INSERT_CLICKS_SQL, [...batch.params]);
  }

  /**
   * Adds up to `maxRows` pending rows to the hourly and daily buckets — their clicks, bot clicks,
   * and the visitors not yet counted in each bucket — and forgets the visitors of buckets older
   * than VISITOR_RETENTION_MS. One statement: the pending rows are taken (DELETE … RETURNING)
   * and added at once, so each is counted once, with two replicas rolling up at once too.
   * Returns the rows taken: `maxRows` means more may wait.
   */
  async rollup(nowMs: number, maxRows = ROLLUP_MAX_ROWS): Promise<number> {
    const { rows } = await this.#db.query<{ taken: number }>(ROLLUP_SQL, [maxRows]);
    await this.#db.query("DELETE FROM click_rollup_visitors WHERE bucket_start < $1", [
      new Date(nowMs - VISITOR_RETENTION_MS),
    ]);
    return rows[0]?.taken ?? 0;
  }

  async series(
    domain: string,
    code: string,
    granularity: Granularity,
    fromMs: number,
    toMs: number,
  ): Promise<SeriesPoint[]> {
    const { rows } = await this.#db.query<{
      bucket_start: Date;
      clicks: bigint;
      bot_clicks: bigint;
      visitors: bigint;
    }>(
      `SELECT bucket_start, clicks, bot_clicks, visitors FROM click_rollups
        WHERE domain = $1 AND code = $2 AND granularity = $3 AND bucket_start >= $4 AND bucket_start < $5
        ORDER BY bucket_start`,
      [domain, code, granularity, new Date(fromMs), new Date(toMs)],
    );
    return rows.map((row) => ({
      bucketStart: row.bucket_start,
      clicks: Number(row.clicks),
      botClicks: Number(row.bot_clicks),
      visitors: Number(row.visitors),
    }));
  }

  /** The raw log's count for a link (bots excluded, and counted apart): what the rollup must agree with. */
  async rawTotals(domain: string, code: string): Promise<{ clicks: number; botClicks: number }> {
    const { rows } = await this.#db.query<{ clicks: bigint; bot_clicks: bigint }>(
      `SELECT coalesce(sum(click_count) FILTER (WHERE NOT bot), 0) AS clicks,
              coalesce(sum(click_count) FILTER (WHERE bot), 0) AS bot_clicks
         FROM clicks WHERE domain = $1 AND code = $2 AND NOT orphan`,
      [domain, code],
    );
    return { clicks: Number(rows[0]?.clicks ?? 0n), botClicks: Number(rows[0]?.bot_clicks ?? 0n) };
  }

  async topReferrers(domain: string, code: string, fromMs: number, toMs: number, limit: number) {
    const { rows } = await this.#db.query<{ referrer_host: string | null; clicks: bigint }>(
      `SELECT referrer_host, sum(click_count) AS clicks FROM clicks
        WHERE domain = $1 AND code = $2 AND at >= $3 AND at < $4 AND NOT bot AND NOT orphan
        GROUP BY referrer_host ORDER BY clicks DESC, referrer_host NULLS LAST LIMIT $5`,
      [domain, code, new Date(fromMs), new Date(toMs), limit],
    );
    return rows.map((row) => ({ referrer: row.referrer_host, clicks: Number(row.clicks) }));
  }

  /**
   * Orphan visits per domain, kind and status, in a range — Shlink's three kinds: `base` (the
   * short domain's root), `unknown` (no such code: 404), `gone` (expired or disabled: 410).
   */
  async orphans(fromMs: number, toMs: number) {
    const { rows } = await this.#db.query<{
      domain: string;
      kind: OrphanKind;
      status: number;
      visits: bigint;
    }>(
      `SELECT domain, CASE WHEN code = '' THEN 'base' WHEN status = 410 THEN 'gone' ELSE 'unknown' END AS kind,
              status, sum(click_count) AS visits
         FROM clicks WHERE orphan AND at >= $1 AND at < $2
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      [new Date(fromMs), new Date(toMs)],
    );
    return rows.map((row) => ({
      domain: row.domain,
      kind: row.kind,
      status: row.status,
      visits: Number(row.visits),
    }));
  }
}
