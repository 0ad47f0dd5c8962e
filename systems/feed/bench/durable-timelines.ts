/**
 * FD-24's last rejected design, built so the bench can measure it: a durable per-follower
 * timeline table in PostgreSQL — one row per (follower, post), the primary key
 * `(follower_id, post_id)` serving "newest first" by a backward index scan — as the fan-out's
 * store. It plugs into the same `Fanout` (the same follower pages from PostgreSQL, the same
 * batches, 4 in flight) in place of the Redis lists: each batch is ONE `INSERT … SELECT FROM
 * unnest` (`ON CONFLICT DO NOTHING`: a redelivered event adds nothing, as FD-17's ZADD). Unlike
 * the lists it keeps every item of every follower, active or not, and it is not capped: a
 * durable timeline is the history, trimmed (if ever) by a job of its own.
 *
 * What it costs is what FD-24 says: every item is a heap row and an index entry written through
 * the WAL, against a few bytes of a listpack in memory (the fan-out bench prints both sides).
 *
 * @example
 * await createDurableTimelines(db);
 * const durable = new DurableTimelines(db);
 * await durable.pushMany([2n, 3n], { id: 900n, atMs: Date.now() }); // 2 rows
 * await durable.page(2n, 20); // [900n, …] newest first
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { FanoutTimelines, TimelineEntry } from "../src/domain/ports.ts";

export const DURABLE_TIMELINE_TABLE = "bench_timeline_items";

export async function createDurableTimelines(db: Database): Promise<void> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS ${DURABLE_TIMELINE_TABLE} (
       follower_id bigint NOT NULL,
       post_id bigint NOT NULL,
       at timestamptz NOT NULL,
       PRIMARY KEY (follower_id, post_id))`,
  );
}

export class DurableTimelines implements FanoutTimelines {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** One row per follower (every follower has a timeline); resolves to the rows added. */
  async pushMany(followerIds: readonly bigint[], entry: TimelineEntry): Promise<number> {
    if (followerIds.length === 0) return 0;
    const { rowCount } = await this.#db.query(
      `INSERT INTO ${DURABLE_TIMELINE_TABLE} (follower_id, post_id, at)
       SELECT f, $2, $3 FROM unnest($1::bigint[]) AS f
       ON CONFLICT DO NOTHING`,
      [followerIds.map(String), String(entry.id), new Date(entry.atMs)],
      { name: "durable_timeline_push" },
    );
    return rowCount;
  }

  async mergeInto(userId: bigint, entries: readonly TimelineEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.#db.query(
      `INSERT INTO ${DURABLE_TIMELINE_TABLE} (follower_id, post_id, at)
       SELECT $1, p, to_timestamp(a / 1000.0) FROM unnest($2::bigint[], $3::float8[]) AS e(p, a)
       ON CONFLICT DO NOTHING`,
      [String(userId), entries.map((e) => String(e.id)), entries.map((e) => e.atMs)],
    );
  }

  async remove(userId: bigint, ids: readonly bigint[]): Promise<number> {
    if (ids.length === 0) return 0;
    const { rowCount } = await this.#db.query(
      `DELETE FROM ${DURABLE_TIMELINE_TABLE} WHERE follower_id = $1 AND post_id = ANY($2::bigint[])`,
      [String(userId), ids.map(String)],
    );
    return rowCount;
  }

  /** The user's newest `limit` post ids (the primary key read backwards). */
  async page(userId: bigint, limit: number): Promise<bigint[]> {
    const { rows } = await this.#db.query<{ post_id: string | bigint }>(
      `SELECT post_id FROM ${DURABLE_TIMELINE_TABLE} WHERE follower_id = $1 ORDER BY post_id DESC LIMIT $2`,
      [String(userId), limit],
    );
    return rows.map((r) => BigInt(r.post_id));
  }

  /** The table's heap, index and TOAST bytes, and its rows. */
  async footprint(): Promise<{ bytes: number; rows: number }> {
    const { rows } = await this.#db.query<{ bytes: string; rows: string }>(
      `SELECT pg_total_relation_size('${DURABLE_TIMELINE_TABLE}')::text AS bytes,
              (SELECT count(*) FROM ${DURABLE_TIMELINE_TABLE})::text AS rows`,
    );
    return { bytes: Number(rows[0]!.bytes), rows: Number(rows[0]!.rows) };
  }
}
