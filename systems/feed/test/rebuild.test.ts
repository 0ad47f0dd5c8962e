/**
 * FD-18/19/20: the rebuild of a missing list, on the real HomeFeed and TimelineStore (the
 * in-process twin, or Redis), with a post store whose pull can be held open, so the herd's
 * interleavings are decided by the test, not by timing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { InProcessScriptRunner } from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { HomeFeed } from "../src/domain/home-feed.ts";
import type { GraphReader, Post, PostReader, TimelineEntry } from "../src/domain/ports.ts";
import { entryOf } from "../src/store/post-store.ts";
import { timelineTwins } from "../src/store/script-twins.ts";
import { TimelineStore, timelineScriptsDir } from "../src/store/timeline-store.ts";

const NOW = Date.UTC(2026, 5, 1);
const DAY = 86_400_000;
const pid = (atMs: number, seq = 0) => snowflakeFloor(atMs) + BigInt(seq);

interface World {
  feed: HomeFeed;
  timelines: TimelineStore;
  keyspace: InProcessKeyspace;
  /** Pulls started and not yet released. */
  pulling: () => number;
  maxPulling: () => number;
  release: () => void;
  hold: boolean;
  pulls: () => number;
}

/** Every user follows one author whose posts are `authored`; pulls block while `hold` is set. */
/** What a down lists' store throws (REDIS_UNAVAILABLE in the service). */
const STORE_DOWN = new Error("the lists' store is down");

async function world(
  authored: bigint[],
  options: { maxRebuilds: number; cap?: number; down?: { value: boolean } },
): Promise<World> {
  const clock = new ManualClock(NOW);
  const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
  const keyspace = new InProcessKeyspace({ clock, maxKeys: 100_000 });
  const cap = options.cap ?? 10;
  const timelines = new TimelineStore(
    new InProcessScriptRunner({ registry, twins: timelineTwins, keyspace }),
    {
      cap,
      ttlMs: 7 * DAY,
      lockMs: 5_000,
    },
  );
  let pulling = 0;
  let maxPulling = 0;
  let pulls = 0;
  let waiters: (() => void)[] = [];
  const w: World = {
    feed: undefined as unknown as HomeFeed,
    timelines,
    keyspace,
    pulling: () => pulling,
    maxPulling: () => maxPulling,
    pulls: () => pulls,
    hold: false,
    release: () => {
      const ready = waiters;
      waiters = [];
      for (const r of ready) r();
    },
  };
  const posts: PostReader = {
    postsByIds: async (ids) =>
      new Map(
        ids
          .filter((id) => authored.includes(id))
          .map((id): [bigint, Post] => [
            id,
            { id, authorId: 1n, kind: "post", text: "t", repostOf: null, createdAtMs: 0, editedAtMs: null },
          ]),
      ),
    recentOf: async () => [],
    pullForRebuild: async (_user, bound): Promise<TimelineEntry[]> => {
      pulls++;
      pulling++;
      maxPulling = Math.max(maxPulling, pulling);
      if (w.hold) await new Promise<void>((resolve) => waiters.push(resolve));
      pulling--;
      return authored
        .filter((id) => entryOf(id).atMs >= bound.sinceMs)
        .slice(0, bound.limit)
        .map(entryOf);
    },
  };
  const graph: GraphReader = { readerView: async () => ({ pulled: [], hidden: new Set() }) };
  let owner = 0;
  const down = options.down ?? { value: false };
  w.feed = new HomeFeed({
    timelines: {
      read: (user, range) => (down.value ? Promise.reject(STORE_DOWN) : timelines.read(user, range)),
      beginRebuild: (user, o) => timelines.beginRebuild(user, o),
      fillRebuild: (user, o, entries) => timelines.fillRebuild(user, o, entries),
      endRebuild: (user, o) => timelines.endRebuild(user, o),
    },
    isListStoreDown: (error) => error === STORE_DOWN,
    posts,
    graph,
    clock,
    thresholds: () => ({ fullPushMax: 100, activePushMax: 200 }),
    cap,
    rebuildMaxAgeMs: 30 * DAY,
    maxRebuilds: options.maxRebuilds,
    newOwner: () => `o${owner++}`,
    celebrityIds: async () => [],
  });
  return w;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test("FD-19 a herd of 50 reads of one missing list: exactly one rebuilds (one pull), the others get what exists with partial (206); afterwards every read is complete", async () => {
  const authored = [pid(NOW - 3_000), pid(NOW - 2_000), pid(NOW - 1_000)];
  const w = await world(authored, { maxRebuilds: 8 });
  w.hold = true;
  const reads = Array.from({ length: 50 }, () => w.feed.read(42n, { limit: 50 }));
  await settle();
  w.release();
  const pages = await Promise.all(reads);
  assert.equal(w.pulls(), 1);
  const complete = pages.filter((p) => !p.partial);
  assert.equal(complete.length, 1);
  assert.deepEqual(
    complete[0]!.posts.map((p) => p.id),
    authored.slice().reverse(),
  );
  const after = await w.feed.read(42n, { limit: 50 });
  assert.equal(after.partial, false);
  assert.deepEqual(
    after.posts.map((p) => p.id),
    authored.slice().reverse(),
    "the result became the list",
  );
  assert.equal(w.pulls(), 1);
});

test("FD-18 FD-19 a restart losing 200 users' lists at once: concurrent rebuilds never exceed the cap, every feed is correct afterwards", async () => {
  const authored = [pid(NOW - 1_000)];
  const w = await world(authored, { maxRebuilds: 4 });
  w.hold = true;
  const users = Array.from({ length: 200 }, (_, i) => BigInt(1_000 + i));
  const first = users.map((u) => w.feed.read(u, { limit: 50 }));
  for (let i = 0; i < 5; i++) await settle();
  assert.equal(w.pulling(), 4);
  w.hold = false;
  w.release();
  const pages = await Promise.all(first);
  assert.ok(w.maxPulling() <= 4, `max ${w.maxPulling()}`);
  assert.equal(pages.filter((p) => !p.partial).length, 4, "the others were told partial (206)");
  // Each user's next reads rebuild within the cap until every list exists; then all are complete.
  for (let round = 0; round < 100; round++) {
    const again = await Promise.all(users.map((u) => w.feed.read(u, { limit: 50 })));
    assert.ok(w.maxPulling() <= 4);
    if (again.every((p) => !p.partial)) {
      for (const p of again)
        assert.deepEqual(
          p.posts.map((x) => x.id),
          authored,
        );
      return;
    }
  }
  assert.fail("the lists were never all rebuilt");
});

test("FD-20 a user back after six months: the list is gone; the first open rebuilds it by pull bounded by count and age; then fan-out feeds it again", async () => {
  const old = pid(NOW - 200 * DAY); // older than the 30-day bound
  const recent = Array.from({ length: 15 }, (_, i) => pid(NOW - 10 * DAY + i * 1_000));
  const w = await world([old, ...recent], { maxRebuilds: 8, cap: 10 });
  const page = await w.feed.read(7n, { limit: 50 });
  assert.equal(page.partial, false);
  assert.equal(page.posts.length, 10, "bounded by count: the cap");
  assert.ok(!page.posts.some((p) => p.id === old), "bounded by age");
  const fresh = pid(NOW + 1);
  assert.equal(
    await w.timelines.pushMany([7n], entryOf(fresh)),
    1,
    "the fan-out writes into the rebuilt list",
  );
  assert.equal((await w.timelines.read(7n, { limit: 1 })).ids[0], fresh);
});

test("FD-18 the lists' store down (a Redis failing over): reads pull within the rebuild cap and answer partial with the right posts, the rest fail fast; nothing is written; back up, the list serves again", async () => {
  const authored = [pid(NOW - 3_000), pid(NOW - 2_000), pid(NOW - 1_000)];
  const down = { value: false };
  const w = await world(authored, { maxRebuilds: 2, down });
  await w.feed.read(1n, { limit: 50 }); // the list exists (rebuilt once)
  const pullsBefore = w.pulls();
  down.value = true;
  w.hold = true;
  // Settled at once: the reads past the cap reject while the others are still held.
  const all = Promise.allSettled(Array.from({ length: 20 }, () => w.feed.read(1n, { limit: 50 })));
  await settle();
  assert.equal(w.pulling(), 2, "no more pulls than the cap");
  w.release();
  const outcomes = await all;
  const served = outcomes.filter((o) => o.status === "fulfilled").map((o) => o.value);
  assert.equal(served.length, 2);
  for (const page of served) {
    assert.equal(page.partial, true);
    assert.deepEqual(
      page.posts.map((p) => p.id),
      authored.slice().reverse(),
    );
  }
  for (const o of outcomes) if (o.status === "rejected") assert.equal(o.reason, STORE_DOWN);
  assert.equal(w.pulls() - pullsBefore, 2);
  w.hold = false;
  down.value = false;
  const back = await w.feed.read(1n, { limit: 50 });
  assert.equal(back.partial, false);
  assert.deepEqual(
    back.posts.map((p) => p.id),
    authored.slice().reverse(),
  );
  assert.equal(w.pulls() - pullsBefore, 2, "the list was still there: no rebuild after the outage");
});
