/**
 * `CONFIG SET maxmemory-policy` between an LRU and an LFU policy at run time. Each entry has
 * one access field (Redis's 24-bit `lru`) that the other policy wrote: reading it must keep
 * counters in 0–255 and keys written before the switch evictable. The bug this pins: an LRU
 * clock read as LFU minutes gave a negative elapsed time, `OBJECT FREQ` 3,262,658, and all
 * 8,000 pre-switch keys unevictable where redis-server kept 8.
 *
 * The same scenario runs against this node and a real `redis-server`: write `OLD` keys under
 * one policy, set maxmemory to what they use, switch, read a few old keys (`HOT`), write `OLD`
 * new keys of the same size. Both servers account memory differently (our estimate, Redis's
 * jemalloc), so each limit is set from that server's own `used_memory`, and results are
 * compared as shares of keys, within the tolerances named below.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { findExecutable } from "@casebook/lab/executables";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { Redis } from "ioredis";
import { NO_EXPIRY } from "../src/domain/cache-entry.ts";
import { lruClock, lruIdleMs } from "../src/domain/eviction-lru.ts";
import { Keyspace } from "../src/domain/keyspace.ts";
import {
  defaultLfuParams,
  lfuCounterOf,
  lfuDecayed,
  lfuInitial,
  lfuTouch,
  MAX_LFU,
} from "../src/domain/lfu-counter.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const OLD = 2_000;
const HOT = 100;
const HOT_READS = 20;
const VALUE = "v".repeat(200);
/** Pre-switch keys left after the fill, as a share of OLD: at most this on either server. */
const MAX_OLD_SURVIVAL = 0.1;
/** The two servers' old-key survival shares may differ by at most this. */
const SURVIVAL_TOLERANCE = 0.05;
/** Under LFU, old keys read HOT_READS times after the switch: at least this share survives on this node. */
const MIN_HOT_SURVIVAL = 0.9;
/**
 * The same, for redis-server: the oracle that the scenario keeps read keys at all. Its counter
 * is probabilistic (log factor 10: 20 reads lift a key only a few steps above a new key's 5)
 * and its eviction samples 5 keys, so some read keys go at random: a CI run saw 0.87. The
 * claim is this node's (MIN_HOT_SURVIVAL); the peer only has to show the same tendency.
 */
const MIN_PEER_HOT_SURVIVAL = 0.75;
/**
 * LFU → LRU, redis-server's old-key survival: it reads the LFU field (minute stamp << 8 |
 * counter) as an LRU seconds clock, so an old key's idle time is an arbitrary figure that the
 * wall clock sweeps over a 60-day cycle (3,815,230 s on 2026-12-04, evicted first), and its
 * eviction samples 5 keys. 0.061–0.069 in five runs on a quiet machine; a loaded CI run saw
 * 0.107. The claim is this node's (MAX_OLD_SURVIVAL); the peer shows the same tendency.
 */
const MAX_PEER_OLD_SURVIVAL_TO_LRU = 0.2;

const oldKey = (i: number) => `old:${String(i).padStart(5, "0")}`;
const newKey = (i: number) => `new:${String(i).padStart(5, "0")}`;

describe("policy switch, field by field", () => {
  const t0 = 1_764_000_000_000;

  test("an LRU clock read under LFU is counter 0 at any time, never out of 0–255", () => {
    for (const nowMs of [t0, t0 + 1, t0 + 37 * 60_000, t0 + 50 * 86_400_000]) {
      const access = lruClock(t0);
      assert.equal(lfuCounterOf(access), 0);
      assert.equal(lfuDecayed(access, nowMs, defaultLfuParams), 0);
      const touched = lfuTouch(access, nowMs, defaultLfuParams, seededRandom(1));
      assert.equal(lfuDecayed(touched, nowMs, defaultLfuParams), 1, "the first hit after the switch counts");
    }
  });

  test("an LFU field read under LRU is its idle time from the minute stamp, never negative", () => {
    const access = lfuInitial(t0);
    const idle = lruIdleMs(access, t0 + 90_000);
    assert.ok(idle >= 90_000 && idle < 90_000 + 60_000, `idle ${idle} ms`);
    assert.ok(lruIdleMs(access, t0) >= 0);
  });

  test("a keyspace switched LRU → LFU evicts the untouched old keys first", () => {
    const clock = new ManualClock(t0);
    const keyspace = new Keyspace({ clock, random: seededRandom("switch"), maxmemoryBytes: 0 });
    keyspace.configure({ policy: "allkeys-lru" });
    for (let i = 0; i < OLD; i++) keyspace.set(oldKey(i), VALUE, NO_EXPIRY);
    keyspace.configure({ maxmemoryBytes: keyspace.usedBytes, policy: "allkeys-lfu" });
    clock.advance(1_000);
    for (let i = 0; i < OLD; i++) keyspace.set(newKey(i), VALUE, NO_EXPIRY);
    let old = 0;
    for (let i = 0; i < OLD; i++) if (keyspace.lookup(oldKey(i)) !== undefined) old++;
    assert.ok(old <= OLD * MAX_OLD_SURVIVAL, `${old} of ${OLD} old keys survived`);
  });
});

const skip = findExecutable("redis-server")
  ? false
  : "redis-server is not installed (Debian package redis-server): no peer to compare with";

interface Outcome {
  oldSurvival: number;
  hotSurvival: number;
  /** OBJECT FREQ (to LFU) or OBJECT IDLETIME (to LRU) of every surviving old key. */
  readings: number[];
}

async function usedMemory(client: Redis): Promise<number> {
  const info = (await client.info("memory")) as string;
  const match = /used_memory:(\d+)/.exec(info);
  assert.ok(match, "INFO memory has used_memory");
  return Number(match[1]);
}

async function runSwitch(client: Redis, from: string, to: string): Promise<Outcome> {
  await client.flushall();
  await client.config("SET", "maxmemory", "0");
  await client.config("SET", "maxmemory-policy", from);
  const write = client.pipeline();
  for (let i = 0; i < OLD; i++) write.set(oldKey(i), VALUE);
  await write.exec();
  await client.config("SET", "maxmemory", String(await usedMemory(client)));
  await client.config("SET", "maxmemory-policy", to);
  const reads = client.pipeline();
  for (let r = 0; r < HOT_READS; r++) for (let i = 0; i < HOT; i++) reads.get(oldKey(i));
  await reads.exec();
  for (let i = 0; i < OLD; i++) await client.set(newKey(i), VALUE); // one at a time: each write evicts
  const survivors: string[] = [];
  for (let i = 0; i < OLD; i++) if ((await client.exists(oldKey(i))) === 1) survivors.push(oldKey(i));
  const hot = survivors.filter((k) => Number(k.slice(4)) < HOT).length;
  const sub = to.endsWith("lfu") ? "FREQ" : "IDLETIME";
  const readings: number[] = [];
  for (const k of survivors) readings.push(Number(await client.call("OBJECT", sub, k)));
  return { oldSurvival: (survivors.length - hot) / (OLD - HOT), hotSurvival: hot / HOT, readings };
}

describe("policy switch: this node vs redis-server", { skip }, () => {
  let peer: SpawnedRedis;
  let node: TestNode;
  let ours: Redis;
  let theirs: Redis;
  before(async () => {
    peer = await spawnRedis({ install: false });
    node = await startCacheNode();
    const options = { lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 10_000 } as const;
    ours = new Redis({ ...options, port: node.port });
    theirs = new Redis(peer.url, options);
    await Promise.all([ours.connect(), theirs.connect()]);
  });
  after(async () => {
    ours?.disconnect();
    theirs?.disconnect();
    await node?.close();
    await peer?.stop();
  });

  test("allkeys-lru → allkeys-lfu: old keys stay evictable, read ones are kept, OBJECT FREQ in 0–255", async (t) => {
    const mine = await runSwitch(ours, "allkeys-lru", "allkeys-lfu");
    const peers = await runSwitch(theirs, "allkeys-lru", "allkeys-lfu");
    const summary = `ours ${JSON.stringify({ ...mine, readings: mine.readings.length })}, redis ${JSON.stringify({ ...peers, readings: peers.readings.length })}`;
    t.diagnostic(summary);
    assert.ok(mine.hotSurvival >= MIN_HOT_SURVIVAL, summary);
    assert.ok(peers.hotSurvival >= MIN_PEER_HOT_SURVIVAL, summary);
    for (const outcome of [mine, peers]) {
      assert.ok(outcome.oldSurvival <= MAX_OLD_SURVIVAL, summary);
      for (const freq of outcome.readings)
        assert.ok(freq >= 0 && freq <= MAX_LFU, `OBJECT FREQ ${freq}; ${summary}`);
    }
    assert.ok(Math.abs(mine.oldSurvival - peers.oldSurvival) <= SURVIVAL_TOLERANCE, summary);
  });

  test("allkeys-lfu → allkeys-lru: old keys stay evictable, OBJECT IDLETIME is never negative", async (t) => {
    const mine = await runSwitch(ours, "allkeys-lfu", "allkeys-lru");
    const peers = await runSwitch(theirs, "allkeys-lfu", "allkeys-lru");
    const summary = `ours ${JSON.stringify({ ...mine, readings: mine.readings.length })}, redis ${JSON.stringify({ ...peers, readings: peers.readings.length })}`;
    t.diagnostic(summary);
    assert.ok(mine.oldSurvival <= MAX_OLD_SURVIVAL, summary);
    assert.ok(peers.oldSurvival <= MAX_PEER_OLD_SURVIVAL_TO_LRU, summary);
    for (const outcome of [mine, peers])
      for (const idle of outcome.readings) assert.ok(idle >= 0, `OBJECT IDLETIME ${idle}; ${summary}`);
    // The bug this pins kept MORE old keys than redis-server; keeping fewer is what LRU asks for.
    assert.ok(mine.oldSurvival <= peers.oldSurvival + SURVIVAL_TOLERANCE, summary);
    // Ours reads the LFU minute stamp, so an old key's idle time is bounded by the test's age.
    for (const idle of mine.readings) assert.ok(idle <= 600, `OBJECT IDLETIME ${idle}`);
  });
});
