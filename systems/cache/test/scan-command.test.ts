/**
 * SCAN's guarantee (scan-command.ts) over RESP: a full iteration returns every key that
 * existed throughout, exactly once, whatever is added or deleted meanwhile; expired keys
 * never come back; MATCH, COUNT and TYPE filter as in Redis; in cluster mode a node
 * returns only its own keys, and OBJECT / MEMORY route by their key like any keyed command.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { keySlot } from "@casebook/kit/cluster-slot";
import { Redis } from "ioredis";
import { startCacheNode, type TestNode } from "./cache-node.ts";
import { type InProcessNode, startTwoNodeCluster, type TwoNodeCluster } from "./cluster-harness.ts";

/** Bound on SCAN calls in one iteration: 16 384 slots, at least one per call. */
const MAX_SCAN_CALLS = 20_000;

/** Every SCAN page of a full iteration, with `between` run after each call. */
async function scanAll(
  redis: Redis,
  options: readonly (string | number)[] = [],
  between: (call: number) => Promise<void> = async () => {},
): Promise<{ keys: string[]; calls: number }> {
  const keys: string[] = [];
  let cursor = "0";
  let calls = 0;
  do {
    const [next, page] = (await redis.call("SCAN", cursor, ...options)) as [string, string[]];
    keys.push(...page);
    cursor = next;
    calls += 1;
    await between(calls);
  } while (cursor !== "0" && calls < MAX_SCAN_CALLS);
  assert.equal(cursor, "0", "the iteration ended");
  return { keys, calls };
}

function fill(node: TestNode, keys: readonly string[]): void {
  for (const key of keys) assert.ok(node.keyspace.set(key, "v", 0));
}

describe("SCAN on a standalone node", () => {
  let node: TestNode;
  let redis: Redis;
  const clock = new ManualClock(1_700_000_000_000);
  before(async () => {
    node = await startCacheNode({ clock });
    redis = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect();
  });
  after(async () => {
    redis?.disconnect();
    await node?.close();
  });

  test("a full iteration over 10 000 keys returns each key exactly once (COUNT 10 and COUNT 1000)", async () => {
    await redis.call("FLUSHALL");
    const keys = Array.from({ length: 10_000 }, (_, i) => `key:${i}`);
    fill(node, keys);
    for (const count of [10, 1000]) {
      const { keys: seen, calls } = await scanAll(redis, ["COUNT", count]);
      assert.equal(seen.length, keys.length, `COUNT ${count}: no duplicates`);
      assert.deepEqual(new Set(seen), new Set(keys), `COUNT ${count}: every key`);
      // About COUNT keys per call (a call returns whole slots, so a page may pass COUNT a little).
      const expected = keys.length / count;
      assert.ok(calls >= expected * 0.5 && calls <= expected * 1.5 + 2, `${calls} calls`);
    }
  });

  test("keys deleted and added during the iteration: every key present throughout is returned, once", async () => {
    await redis.call("FLUSHALL");
    const stable = Array.from({ length: 5_000 }, (_, i) => `stable:${i}`);
    const doomed = Array.from({ length: 5_000 }, (_, i) => `doomed:${i}`);
    fill(node, stable);
    fill(node, doomed);
    let added = 0;
    const { keys: seen } = await scanAll(redis, ["COUNT", 50], async (call) => {
      // Between calls: delete 50 of the doomed keys and add 50 new ones, all over the slot range.
      const batch = doomed.slice((call - 1) * 50, call * 50);
      if (batch.length > 0) await redis.call("DEL", ...batch);
      const fresh = Array.from({ length: 50 }, () => `new:${added++}`);
      await redis.call("MSET", ...fresh.flatMap((key) => [key, "v"]));
    });
    const counts = new Map<string, number>();
    for (const key of seen) counts.set(key, (counts.get(key) ?? 0) + 1);
    for (const key of stable) assert.equal(counts.get(key), 1, `${key} returned once`);
    for (const [key, times] of counts) assert.equal(times, 1, `${key} returned once`);
    assert.ok(added > 0, "keys were added during the iteration");
  });

  test("expired keys are never returned, and SCAN collects them", async () => {
    await redis.call("FLUSHALL");
    fill(node, ["live:1", "live:2"]);
    for (let i = 0; i < 100; i++) node.keyspace.set(`gone:${i}`, "v", clock.nowMs() + 1_000);
    clock.advance(1_001);
    const { keys } = await scanAll(redis, ["COUNT", 100_000]);
    assert.deepEqual(keys.sort(), ["live:1", "live:2"]);
    assert.equal(node.keyspace.size, 2, "the expired keys were collected on the way");
    assert.deepEqual(((await redis.call("KEYS", "*")) as string[]).sort(), ["live:1", "live:2"]);
  });

  test("MATCH, COUNT and TYPE filter as in Redis", async () => {
    await redis.call("FLUSHALL");
    const users = Array.from({ length: 300 }, (_, i) => `user:${i}`);
    fill(node, users);
    fill(node, ["session:1", "session:2", "usr:1"]);
    const { keys: matched } = await scanAll(redis, ["MATCH", "user:*", "COUNT", 20]);
    assert.deepEqual(matched.sort(), [...users].sort());
    const { keys: typed } = await scanAll(redis, ["TYPE", "STRING", "COUNT", 1000]);
    assert.equal(typed.length, 303, "TYPE is case-insensitive, every key is a string");
    assert.deepEqual((await scanAll(redis, ["TYPE", "hash"])).keys, [], "no key has another type");
    assert.deepEqual((await scanAll(redis, ["MATCH", "session:[2-9]"])).keys, ["session:2"]);
    // COUNT bounds the work of one call: whole slots until ~COUNT keys (these keys share no slot).
    const [, page] = (await redis.call("SCAN", "0", "COUNT", "5")) as [string, string[]];
    assert.ok(page.length <= 5, `${page.length} keys in one page`);
    // MATCH filters after the walk: a page may be empty with a cursor that is not done.
    const [cursor, none] = (await redis.call("SCAN", "0", "MATCH", "nothing:*")) as [string, string[]];
    assert.deepEqual(none, []);
    assert.notEqual(cursor, "0");
    assert.deepEqual(((await redis.call("KEYS", "session:*")) as string[]).sort(), [
      "session:1",
      "session:2",
    ]);
  });

  test("the cursor is a slot: an empty keyspace is walked in bounded calls, a cursor past the slots ends it", async () => {
    await redis.call("FLUSHALL");
    const { calls } = await scanAll(redis, ["COUNT", 1000]);
    assert.equal(calls, 2, "COUNT 1000 visits up to 10 000 slots per call");
    assert.deepEqual(await redis.call("SCAN", "16384"), ["0", []]);
    assert.deepEqual(await redis.call("SCAN", "18446744073709551615"), ["0", []]);
    node.keyspace.set("{a}x", "v", 0);
    const slot = keySlot("a");
    assert.deepEqual(await redis.call("SCAN", String(slot), "COUNT", "1"), [String(slot + 1), ["{a}x"]]);
  });
});

describe("SCAN in cluster mode: a node returns its own keys", { timeout: 60_000 }, () => {
  let a: InProcessNode;
  let b: InProcessNode;
  let two: TwoNodeCluster | undefined;

  before(async () => {
    two = await startTwoNodeCluster(10_000);
    ({ a, b } = two);
  });

  after(async () => {
    await two?.close();
  });

  test("each node's full SCAN is exactly the keys of its slots; OBJECT and MEMORY USAGE redirect", async () => {
    const keys = Array.from({ length: 2_000 }, (_, i) => `k:${i}`);
    for (const key of keys) (keySlot(key) < 8192 ? a : b).keyspace.set(key, "v", 0);
    const clients = [a, b].map(
      (node) => new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 }),
    );
    try {
      await Promise.all(clients.map((client) => client.connect()));
      const [onA, onB] = await Promise.all(clients.map((client) => scanAll(client, ["COUNT", 200])));
      assert.deepEqual(new Set(onA!.keys), new Set(keys.filter((key) => keySlot(key) < 8192)));
      assert.deepEqual(new Set(onB!.keys), new Set(keys.filter((key) => keySlot(key) >= 8192)));
      assert.equal(onA!.keys.length + onB!.keys.length, keys.length);
      const onBsSide = keys.find((key) => keySlot(key) >= 8192)!;
      const slot = keySlot(onBsSide);
      await assert.rejects(clients[0]!.call("OBJECT", "ENCODING", onBsSide), {
        message: `MOVED ${slot} 127.0.0.1:${b.port}`,
      });
      await assert.rejects(clients[0]!.call("MEMORY", "USAGE", onBsSide), {
        message: `MOVED ${slot} 127.0.0.1:${b.port}`,
      });
      assert.equal(await clients[1]!.call("OBJECT", "ENCODING", onBsSide), "embstr");
      assert.equal(((await clients[0]!.call("OBJECT", "HELP")) as string[]).length, 15, "HELP has no key");
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});
