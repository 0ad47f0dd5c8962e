/**
 * The click log in SQL (migrations/003_clicks.sql): an append-only table partitioned by day.
 *
 * - `append`/`appendBatch`: one INSERT for a whole batch (unnest of arrays), after making sure each day's
 *   partition exists (CREATE TABLE IF NOT EXISTS … PARTITION OF, remembered per process). A row
 *   stands for `click_count` identical clicks (the flusher folds them: domain/click-record.ts
 *   ClickEncoder), so every count below is a sum of `click_count`, never a count of rows.
 * - `rollup`: recomputes the hourly and daily buckets of a time range from the raw rows and
 *   upserts them — idempotent, so a late flush or two replicas rolling up at once end with the
 *   same numbers, and the rollup always agrees with the raw log.
 * - `series`, `totals`, `topReferrers`, `orphans`: the analytics reads.
 *
 * @example
 * const clicks = new ClickStore(db);
 * await clicks.append(records);
 * await clicks.rollup(fromMs, toMs);
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { checkIdentifier } from "@casebook/infra/sql/sql-schema";
import { type ClickRecord, emptyClickColumns, pushClickRecord } from "../domain/click-record.ts";
import { type ClickBatch, INSERT_CLICKS_SQL, toClickBatch } from "./click-batch.ts";

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

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

  /** Recomputes every hourly and daily bucket that overlaps [fromMs, toMs) from the raw log. */
  async rollup(fromMs: number, toMs: number): Promise<void> {
    const ranges: [Granularity, number][] = [
      ["hour", HOUR_MS],
      ["day", DAY_MS],
    ];
    for (const [granularity, size] of ranges) {
      const from = new Date(Math.floor(fromMs / size) * size);
      const to = new Date(Math.ceil(toMs / size) * size);
      await this.#db.query(
        `INSERT INTO click_rollups (domain, code, granularity, bucket_start, clicks, bot_clicks, visitors)
         SELECT domain, code, $1, date_trunc($1, at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
                coalesce(sum(click_count) FILTER (WHERE NOT bot), 0), coalesce(sum(click_count) FILTER (WHERE bot), 0),
                count(DISTINCT visitor_hash) FILTER (WHERE NOT bot)
           FROM clicks WHERE at >= $2 AND at < $3 AND NOT orphan
          GROUP BY 1, 2, 4
         ON CONFLICT (domain, code, granularity, bucket_start) DO UPDATE
           SET clicks = EXCLUDED.clicks, bot_clicks = EXCLUDED.bot_clicks, visitors = EXCLUDED.visitors`,
        [granularity, from, to],
      );
    }
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
