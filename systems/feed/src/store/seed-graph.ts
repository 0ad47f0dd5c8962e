/**
 * Writes the power-law graph (domain/power-law-graph.ts) into the feed's tables in a few
 * set-based statements — accounts 1..users, the edges of every author with at least
 * `minFollowers`, follower counts, and about `activeShare` of the accounts marked active — so
 * the bench, the demos and the tests share one shape. Author r is account r; its followers are
 * spread over all accounts by a multiplicative step (no self-follows, no duplicates).
 *
 * @example
 * await seedGraph(db, { users: 20_000, topShare: 0.25, alpha: 1, minFollowers: 5, activeShare: 0.3, nowMs });
 */
import type { Database } from "@casebook/infra/sql/sql";
import { authorsAbove, followersOfRank, type PowerLawShape } from "../domain/power-law-graph.ts";

export interface SeedOptions extends PowerLawShape {
  readonly minFollowers: number;
  readonly activeShare: number;
  readonly nowMs: number;
}

/** A prime above any user count we seed: k ↦ (r·7919 + k·SPREAD) mod users visits distinct accounts. */
const SPREAD = 1_000_003;

export async function seedGraph(db: Database, o: SeedOptions): Promise<{ authors: number; edges: number }> {
  const authors = authorsAbove(o.minFollowers, o);
  return db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO accounts (id, last_active_at)
       SELECT g, CASE WHEN (g * 2654435761 % 1000) < $2 THEN $3::timestamptz END FROM generate_series(1, $1::int8) g
       ON CONFLICT (id) DO NOTHING`,
      [o.users, Math.round(o.activeShare * 1000), new Date(o.nowMs)],
    );
    const counts = Array.from({ length: authors }, (_, i) => followersOfRank(i + 1, o));
    const { rowCount } = await tx.query(
      `INSERT INTO follows (followee_id, follower_id, created_at)
       SELECT a.rank, ((a.rank * 7919 + k * $3::int8) % $1::int8) + 1, $4
         FROM unnest($2::int4[]) WITH ORDINALITY AS a(n, rank), generate_series(1, a.n) k
        WHERE ((a.rank * 7919 + k * $3::int8) % $1::int8) + 1 <> a.rank
       ON CONFLICT DO NOTHING`,
      [o.users, JSON.stringify(counts).replace("[", "{").replace("]", "}"), SPREAD, new Date(o.nowMs)],
    );
    await tx.query(
      `UPDATE accounts a SET follower_count = c.n
         FROM (SELECT followee_id, count(*)::int4 AS n FROM follows GROUP BY followee_id) c
        WHERE a.id = c.followee_id`,
    );
    return { authors, edges: rowCount };
  });
}
