/**
 * FD-24's durable per-follower timeline table, as the fan-out bench runs it (bench/durable-timelines.ts),
 * on a real PostgreSQL: it "works" — the same Fanout path fills every follower's timeline, a
 * redelivered event adds nothing, a user reads their newest first — before the bench prices it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { createDurableTimelines, DurableTimelines } from "../bench/durable-timelines.ts";
import { Fanout } from "../src/domain/fanout.ts";
import { GraphStore } from "../src/store/graph-store.ts";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import { seedGraph } from "../src/store/seed-graph.ts";

test("FD-24 the durable timeline table works: the fan-out writes one row per follower, a redelivery adds none, reads come newest first", async (t) => {
  const databaseUrl = await requirePostgres(t);
  if (!databaseUrl) return;
  const schema = await openPostgresTestSchema(databaseUrl, {
    system: "feed",
    prefix: "feed_durable_tl",
    prepare: async (db) => {
      await migrateFeed(db);
      await createDurableTimelines(db);
    },
  });
  try {
    await seedGraph(schema.db, {
      users: 400,
      topShare: 0.5,
      alpha: 1,
      minFollowers: 2,
      activeShare: 1,
      nowMs: Date.now(),
    });
    const graph = new GraphStore(schema.db);
    const durable = new DurableTimelines(schema.db);
    const fanout = new Fanout({
      graph,
      timelines: durable,
      posts: new PostStore(schema.db),
      clock: systemClock,
      thresholds: () => ({ fullPushMax: Number.MAX_SAFE_INTEGER, activePushMax: Number.MAX_SAFE_INTEGER }),
      activeDays: 7,
      pageSize: 50,
      cap: 128,
    });
    const followers = await graph.followerCount(1n);
    assert.ok(followers > 100, `the top author has ${followers} followers`);
    const first = await fanout.handle({ kind: "post", actorId: 1n, targetId: 1_000n });
    const second = await fanout.handle({ kind: "post", actorId: 1n, targetId: 2_000n });
    const { rows } = await durable.footprint();
    // Every follower's timeline, and the author's own, got each post once.
    assert.equal(first.written, second.written);
    assert.equal(rows, 2 * first.written);
    assert.ok(first.written >= followers, `${first.written} rows for ${followers} followers`);
    const again = await fanout.handle({ kind: "post", actorId: 1n, targetId: 1_000n });
    assert.equal(again.written, 0, "a redelivered event adds no row");
    assert.equal((await durable.footprint()).rows, rows);
    const { rows: someFollower } = await schema.db.query<{ follower_id: string }>(
      "SELECT follower_id::text FROM follows WHERE followee_id = 1 LIMIT 1",
    );
    const reader = BigInt(someFollower[0]!.follower_id);
    assert.deepEqual(await durable.page(reader, 20), [2_000n, 1_000n]);
    assert.equal(await durable.remove(reader, [2_000n]), 1);
    assert.deepEqual(await durable.page(reader, 20), [1_000n]);
  } finally {
    await schema.drop();
  }
});
