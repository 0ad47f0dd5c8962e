/**
 * The timeline scripts on both engines (the twin rule): FD-10/11/16/17/19 at the store's
 * level. Ids are Snowflake-shaped (time in the high bits), so the score (post time) and the
 * id agree on order, as in production.
 */
import assert from "node:assert/strict";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { contractSuite } from "@casebook/lab/contract-suite";
import { entryOf } from "../src/store/post-store.ts";
import { TimelineStore } from "../src/store/timeline-store.ts";
import {
  inProcessTimelines,
  redisTimelines,
  TEST_CAP,
  TIMELINE_OPTIONS,
  type TimelineHarness,
} from "./timeline-backends.ts";

const T0 = Date.UTC(2026, 0, 1);
/** The n-th post id, n ms after T0 (plus a sequence so two ids of one ms differ). */
const pid = (n: number, seq = 0): bigint => snowflakeFloor(T0 + n) + BigInt(seq);
let nextUser = 1_000n;
const user = () => nextUser++;
/**
 * The expiries a test waits out (real time on Redis, the manual clock in process). Only the
 * expiry is timed by them: what must still be held or stored before it lives 30 s or more,
 * so a loaded host cannot make it expire between two script calls.
 */
const SHORT_MS = 100;
const PAST_SHORT_MS = SHORT_MS + 50;
const LONG_MS = 60_000;

/** A user whose list exists (as after a rebuild or a first open). */
async function withList(h: TimelineHarness, userId: bigint): Promise<void> {
  const [store] = h.stores;
  assert.equal(await store.beginRebuild(userId, "o"), true);
  assert.equal(await store.fillRebuild(userId, "o", []), true);
  await store.endRebuild(userId, "o");
}

contractSuite("timeline store", [inProcessTimelines, redisTimelines], (it) => {
  it("FD-11 a sorted set keeps the newest `cap` by post time, whatever the insert order (out-of-order inserts merge by time)", async (h) => {
    const [store] = h.stores;
    const u = user();
    await withList(h, u);
    for (const n of [3, 1, 7, 2, 9, 5, 8]) await store.pushMany([u], entryOf(pid(n)));
    const { ids, state } = await store.read(u, { limit: 50 });
    assert.equal(state, "ready");
    assert.deepEqual(
      ids,
      [9, 8, 7, 5, 3].map((n) => pid(n)),
    );
    assert.equal(ids.length, TEST_CAP);
  });

  it("FD-11 the list variant (LPUSH + LTRIM) keeps a fixed size, newest first", async (h) => {
    const [store] = h.stores;
    const u = user();
    for (let n = 1; n <= 8; n++) await store.listPushMany([u], pid(n));
    assert.deepEqual(
      await store.listRead(u, 50),
      [8, 7, 6, 5, 4].map((n) => pid(n)),
    );
  });

  it("FD-17 pushing the same id twice leaves one entry in the sorted set; the list holds it twice (LTRIM bounds it, the reader dedupes)", async (h) => {
    const [store] = h.stores;
    const u = user();
    await withList(h, u);
    await store.pushMany([u], entryOf(pid(1)));
    await store.pushMany([u], entryOf(pid(1)));
    assert.deepEqual((await store.read(u, { limit: 50 })).ids, [pid(1)]);
    await store.listPushMany([u], pid(1));
    await store.listPushMany([u], pid(1));
    const listed = await store.listRead(u, 50);
    assert.deepEqual(listed, [pid(1), pid(1)]);
    assert.deepEqual([...new Set(listed)], [pid(1)], "the client-side dedupe");
  });

  it("FD-10 a list holds ids only: every member is a decimal Snowflake, no content", async (h) => {
    const [store] = h.stores;
    const u = user();
    await withList(h, u);
    await store.pushMany([u], entryOf(pid(4)));
    if (h.redis) {
      const members = await h.redis.zrange(`tl:{${u}}`, "0", "-1");
      for (const m of members) assert.match(m, /^\d{1,19}$/);
    }
    assert.deepEqual((await store.read(u, { limit: 5 })).ids, [pid(4)]);
  });

  it("FD-16 a fan-out write to 2 500 followers is one pipelined round trip of 5 script calls (500 lists each), not 2 500", async (h) => {
    const [store] = h.stores;
    const followers = Array.from({ length: 2_500 }, () => user());
    for (const f of followers.slice(0, 10)) await withList(h, f);
    const [trips, calls] = [h.roundTrips(), h.scriptCalls()];
    const written = await store.pushMany(followers, entryOf(pid(11)));
    assert.equal(h.roundTrips() - trips, 1);
    assert.equal(h.scriptCalls() - calls, 5);
    assert.equal(written, 10, "lists that do not exist are skipped, not created");
    assert.equal((await store.read(followers[20]!, { limit: 5 })).state, "missing");
  });

  it("FD-19 the rebuild lock: SET NX PX lets one owner in; release checks the owner; it expires after PX", async (h) => {
    const [a, b] = h.stores;
    const u = user();
    assert.equal(await a.beginRebuild(u, "owner-a"), true);
    assert.equal(await b.beginRebuild(u, "owner-b"), false);
    assert.equal((await b.read(u, { limit: 5 })).state, "rebuilding");
    await b.endRebuild(u, "owner-b"); // not b's lock: must stay
    assert.equal(await b.beginRebuild(u, "owner-b"), false);
    assert.equal(
      await b.fillRebuild(u, "owner-b", [entryOf(pid(1))]),
      false,
      "a non-owner's fill writes nothing",
    );
    assert.equal(await a.fillRebuild(u, "owner-a", [entryOf(pid(2))]), true);
    await a.endRebuild(u, "owner-a");
    assert.deepEqual(await b.read(u, { limit: 5 }), { ids: [pid(2)], state: "ready" });
    // Expiry: a crashed rebuilder's lock frees itself after PX — a short PX here (the stores
    // above hold theirs 30 s, so a loaded host never expired it between their calls).
    const v = user();
    const crashed = new TimelineStore(h.runners[0], { ...TIMELINE_OPTIONS, lockMs: SHORT_MS });
    assert.equal(await crashed.beginRebuild(v, "crashed"), true);
    await h.passMs(PAST_SHORT_MS);
    assert.equal(await b.beginRebuild(v, "next"), true);
  });

  it("FD-19 a push made while a rebuild pulls lands in the list and survives the fill", async (h) => {
    const [a, b] = h.stores;
    const u = user();
    assert.equal(await a.beginRebuild(u, "o"), true);
    await b.pushMany([u], entryOf(pid(50)));
    await a.fillRebuild(u, "o", [entryOf(pid(10)), entryOf(pid(20))]);
    await a.endRebuild(u, "o");
    assert.deepEqual((await a.read(u, { limit: 5 })).ids, [pid(50), pid(20), pid(10)]);
  });

  it("FD-15 reads page by id: strictly below `before`, strictly above `since`, even within one millisecond", async (h) => {
    const [store] = h.stores;
    const u = user();
    await withList(h, u);
    for (const id of [pid(5, 0), pid(5, 1), pid(5, 2), pid(6)]) await store.pushMany([u], entryOf(id));
    assert.deepEqual((await store.read(u, { beforeId: pid(5, 2), limit: 5 })).ids, [pid(5, 1), pid(5, 0)]);
    assert.deepEqual((await store.read(u, { sinceId: pid(5, 1), limit: 5 })).ids, [pid(6), pid(5, 2)]);
  });

  it("an unfollow's removal takes exactly the given ids out", async (h) => {
    const [store] = h.stores;
    const u = user();
    await withList(h, u);
    for (const n of [1, 2, 3]) await store.pushMany([u], entryOf(pid(n)));
    assert.equal(await store.remove(u, [pid(1), pid(3), pid(99)]), 2);
    assert.deepEqual((await store.read(u, { limit: 5 })).ids, [pid(2)]);
  });

  it("FD-22 a session's ranking is stored in order and read by position; an expired session reads as missing", async (h) => {
    const [store] = h.stores;
    const u = user();
    await store.saveRanking(u, "session-1", [pid(3), pid(1), pid(2)], LONG_MS);
    assert.deepEqual(await store.rankingPage(u, "session-1", 0, 2), [pid(3), pid(1)]);
    assert.deepEqual(await store.rankingPage(u, "session-1", 2, 2), [pid(2)]);
    await store.saveRanking(u, "empty", [], LONG_MS);
    assert.deepEqual(await store.rankingPage(u, "empty", 0, 2), []);
    // Expiry: the session saved again with a short TTL. The ranking read above lives 60 s, so
    // it is missing below only if this save's TTL replaced that one and ran out.
    await store.saveRanking(u, "session-1", [pid(3), pid(1), pid(2)], SHORT_MS);
    await h.passMs(PAST_SHORT_MS);
    assert.equal(await store.rankingPage(u, "session-1", 0, 2), undefined);
  });
});
