import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { InProcessKeyspace } from "../../src/redis/in-process-keyspace.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";

function open(options: { maxKeys?: number; maxElementsPerKey?: number; sweepPerCall?: number } = {}) {
  const clock = new ManualClock(1_000_000);
  return { clock, keyspace: new InProcessKeyspace({ clock, ...options }) };
}

test("time() is Redis TIME from the injected clock: seconds and microseconds", () => {
  const { clock, keyspace } = open();
  clock.advance(1_234);
  assert.deepEqual(keyspace.time(), [1_001, 234_000]);
});

test("strings: SET/GET, NX and XX, INCRBY keeps the TTL, SET clears it unless KEEPTTL", () => {
  const { keyspace } = open();
  assert.equal(keyspace.get("s"), null);
  assert.equal(keyspace.set("s", 5, { nx: true }), true);
  assert.equal(keyspace.set("s", 6, { nx: true }), false);
  assert.equal(keyspace.set("missing", 1, { xx: true }), false);
  assert.equal(keyspace.get("s"), "5");
  keyspace.pexpire("s", 1_000);
  assert.equal(keyspace.incrBy("s", 2), 7);
  assert.equal(keyspace.pttl("s"), 1_000);
  keyspace.set("s", "x", { keepTtl: true });
  assert.equal(keyspace.pttl("s"), 1_000);
  keyspace.set("s", "y");
  assert.equal(keyspace.pttl("s"), -1);
  assert.throws(
    () => keyspace.incrBy("s", 1),
    (e) => redisErrors.is(e, "REDIS_NOT_INTEGER"),
  );
  assert.throws(() => keyspace.set("s", 1, { pxMs: 0 }), /invalid expire time/);
});

test("a key expires when now passes expiresAt, not at it (Redis: now > when)", () => {
  const { clock, keyspace } = open();
  keyspace.set("k", "v", { pxMs: 100 });
  clock.advance(100);
  assert.equal(keyspace.get("k"), "v");
  assert.equal(keyspace.pttl("k"), 0);
  clock.advance(1);
  assert.equal(keyspace.get("k"), null);
  assert.equal(keyspace.pttl("k"), -2);
  assert.equal(keyspace.dbsize(), 0, "lazy expiry removed it on access");
});

test("PEXPIRE with a non-positive ttl deletes the key; PERSIST removes the expiry", () => {
  const { keyspace } = open();
  keyspace.set("a", 1);
  assert.equal(keyspace.pexpire("a", 0), true);
  assert.equal(keyspace.exists("a"), false);
  assert.equal(keyspace.pexpire("a", 10), false);
  keyspace.set("b", 1, { pxMs: 10 });
  assert.equal(keyspace.persist("b"), true);
  assert.equal(keyspace.pttl("b"), -1);
});

test("the active sweep removes due keys without anyone reading them, bounded per call", () => {
  const { clock, keyspace } = open({ sweepPerCall: 3 });
  for (let i = 0; i < 10; i++) keyspace.set(`k${i}`, i, { pxMs: 10 + i });
  keyspace.set("forever", 1);
  clock.advance(100);
  assert.equal(keyspace.dbsize(), 11);
  keyspace.atomic(() => undefined);
  assert.equal(keyspace.dbsize(), 8, "one call sweeps at most sweepPerCall keys");
  assert.equal(keyspace.sweepExpired(100), 7);
  assert.equal(keyspace.dbsize(), 1);
});

test("a refreshed TTL is not swept at its old expiry, and stale heap entries stay bounded", () => {
  const { clock, keyspace } = open();
  keyspace.set("k", 1);
  for (let i = 0; i < 5_000; i++) {
    keyspace.pexpire("k", 50);
    clock.advance(1);
  }
  assert.equal(keyspace.sweepExpired(10_000), 0);
  assert.equal(keyspace.pttl("k"), 49);
  const { keysWithTtl, expiryEntries } = keyspace.stats();
  assert.equal(keysWithTtl, 1);
  assert.ok(expiryEntries <= 2 * keysWithTtl + 1_024, `${expiryEntries} heap entries for one key`);
  clock.advance(50);
  assert.equal(keyspace.sweepExpired(10_000), 1);
});

test("containers: empty ones vanish, type clashes are WRONGTYPE", () => {
  const { keyspace } = open();
  assert.equal(keyspace.hset("h", { a: 1, b: "2" }), 2);
  assert.equal(keyspace.hset("h", { a: 3 }), 0);
  assert.equal(keyspace.hincrBy("h", "a", 4), 7);
  assert.deepEqual(keyspace.hgetall("h"), { a: "7", b: "2" });
  assert.equal(keyspace.hdel("h", "a", "b", "zz"), 2);
  assert.equal(keyspace.type("h"), "none");
  keyspace.set("s", "x");
  assert.throws(
    () => keyspace.hget("s", "f"),
    (e) => redisErrors.is(e, "REDIS_WRONG_TYPE"),
  );
  assert.throws(() => keyspace.zadd("s", 1, "m"), /WRONGTYPE/);
});

test("lists: LPUSH reverses like Redis, ranges take negative indexes, LTRIM to nothing deletes", () => {
  const { keyspace } = open();
  assert.equal(keyspace.lpush("l", "a", "b", "c"), 3);
  assert.equal(keyspace.rpush("l", "d"), 4);
  assert.deepEqual(keyspace.lrange("l", 0, -1), ["c", "b", "a", "d"]);
  assert.deepEqual(keyspace.lrange("l", -2, 100), ["a", "d"]);
  assert.equal(keyspace.lpop("l"), "c");
  assert.equal(keyspace.rpop("l"), "d");
  keyspace.ltrim("l", 5, 10);
  assert.equal(keyspace.exists("l"), false);
  assert.equal(keyspace.lpop("l"), null);
});

test("sorted sets: ZADD, ZSCORE, ranges by rank and score, ZREMRANGEBYSCORE", () => {
  const { keyspace } = open();
  keyspace.zadd("z", 3, "c");
  keyspace.zadd("z", 1, "a");
  keyspace.zadd("z", 2, "b");
  assert.equal(keyspace.zadd("z", 1, "a2"), 1);
  assert.equal(keyspace.zadd("z", 5, "a2"), 0);
  assert.deepEqual(keyspace.zrange("z", 0, -1), ["a", "b", "c", "a2"]);
  assert.deepEqual(keyspace.zrangeByScore("z", "(1", "+inf", { offset: 0, count: 2 }), ["b", "c"]);
  assert.equal(keyspace.zcount("z", "-inf", 3), 3);
  assert.equal(keyspace.zremRangeByScore("z", 0, 2), 2);
  assert.equal(keyspace.zscore("z", "c"), 3);
  assert.equal(keyspace.zrem("z", "c", "a2"), 2);
  assert.equal(keyspace.exists("z"), false);
});

test("atomic() freezes time for its whole duration, as Redis does for a script", () => {
  const { clock, keyspace } = open();
  keyspace.set("k", 1, { pxMs: 5 });
  const seen = keyspace.atomic(() => {
    const before = keyspace.nowMs();
    clock.advance(10); // the wall clock moves while the step runs…
    return [before, keyspace.nowMs(), keyspace.exists("k")];
  });
  assert.deepEqual(seen, [1_000_000, 1_000_000, true], "…the step does not see it");
  assert.equal(keyspace.exists("k"), false);
});

test("maxKeys: a full store refuses a call up front, after sweeping what it can", () => {
  const { clock, keyspace } = open({ maxKeys: 3 });
  keyspace.set("a", 1, { pxMs: 10 });
  keyspace.set("b", 1);
  keyspace.set("c", 1);
  assert.throws(
    () => keyspace.set("d", 1),
    (e) => redisErrors.is(e, "REDIS_KEYSPACE_FULL") && /3 keys/.test(e.message),
  );
  clock.advance(11);
  assert.equal(keyspace.set("d", 1), true, "the expired key made room");
  assert.throws(
    () =>
      keyspace.atomic(() => {
        keyspace.set("b", 2);
        keyspace.set("e", 1);
      }, ["b", "e"]),
    (e) => redisErrors.is(e, "REDIS_KEYSPACE_FULL"),
  );
  assert.equal(keyspace.get("b"), "1", "refused up front: nothing was written");
  assert.equal(
    keyspace.atomic(() => keyspace.set("b", 2), ["b"]),
    true,
    "a full store serves the keys it holds",
  );
  assert.equal(keyspace.set("c", 2), true, "overwriting an existing key needs no room");
});

test("maxElementsPerKey bounds one container", () => {
  const { keyspace } = open({ maxElementsPerKey: 2 });
  keyspace.rpush("l", 1, 2);
  assert.throws(
    () => keyspace.rpush("l", 3),
    (e) => redisErrors.is(e, "REDIS_KEYSPACE_FULL"),
  );
  keyspace.hset("h", { a: 1, b: 1 });
  assert.throws(() => keyspace.hset("h", { c: 1 }), /maximum of 2 elements/);
  keyspace.zadd("z", 1, "a");
  keyspace.zadd("z", 2, "b");
  assert.equal(keyspace.zadd("z", 3, "b"), 0, "re-scoring adds no element");
  assert.throws(() => keyspace.zadd("z", 1, "c"), /maximum of 2 elements/);
});

test("rewriting the same expiry on every call keeps the expiry heap bounded by the keys", () => {
  const clock = new ManualClock(1_000);
  const keyspace = new InProcessKeyspace({ clock, maxKeys: 100_000 });
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 2_000; i++) keyspace.pexpireAt(setKey(keyspace, `w:${i}`), 60_000);
  }
  const { keysWithTtl, expiryEntries } = keyspace.stats();
  assert.equal(keysWithTtl, 2_000);
  assert.ok(expiryEntries <= 2 * keysWithTtl + 1_024, `heap holds ${expiryEntries} entries`);
});

function setKey(keyspace: InProcessKeyspace, key: string): string {
  keyspace.hset(key, { count: 1 });
  return key;
}
