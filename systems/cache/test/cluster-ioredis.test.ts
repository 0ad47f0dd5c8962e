/**
 * ioredis's Cluster client against a 3-primary / 3-replica cluster of OUR node processes:
 * the client library of CA-06 is the real one, so everything it relies on — CLUSTER SLOTS,
 * -MOVED, -ASK with ASKING, TRYAGAIN, READONLY — must be what Redis Cluster does.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { keySlot } from "@casebook/kit/cluster-slot";
import type { Cluster } from "ioredis";
import { planJoin } from "../src/domain/slot-rebalance.ts";
import {
  keysInSlots,
  NO_FAILOVER_NODE_TIMEOUT_MS,
  startTestCluster,
  type TestCluster,
  waitUntil,
} from "./cluster-harness.ts";

describe("ioredis Cluster on our nodes", { timeout: 120_000 }, () => {
  let harness: TestCluster;

  before(async () => {
    harness = await startTestCluster({ nodes: 6, replicas: 1, nodeTimeoutMs: NO_FAILOVER_NODE_TIMEOUT_MS });
  });

  after(async () => {
    await harness?.stop();
  });

  test("CA-05 reads and writes land on the primary owning each key's slot", async () => {
    const redis = harness.ioredis();
    const keys = Array.from({ length: 600 }, (_, i) => `user:${i}`);
    await Promise.all(keys.map((key) => redis.set(key, `v-${key}`)));
    const values = await Promise.all(keys.map((key) => redis.get(key)));
    assert.deepEqual(
      values,
      keys.map((key) => `v-${key}`),
    );
    for (const index of [0, 1, 2]) {
      const admin = await harness.admin(index);
      const size = (await admin.call("DBSIZE")) as number;
      // 600 keys over 3 equal slot ranges: each primary holds about 200.
      assert.ok(size > 120 && size < 280, `primary ${index} holds ${size} keys`);
    }
    await Promise.all(keys.map((key) => redis.del(key)));
  });

  test("CA-07 hash tags keep related keys on one node; MGET across slots is CROSSSLOT", async () => {
    const redis = harness.ioredis();
    await redis.mset("{event:42}:seats", "17", "{event:42}:page", "<html>");
    assert.deepEqual(await redis.mget("{event:42}:seats", "{event:42}:page"), ["17", "<html>"]);
    assert.equal(keySlot("{event:42}:seats"), keySlot("{event:42}:page"));
    const owner = await harness.ownerOf(keySlot("event:42"));
    const admin = await harness.admin(owner.index);
    assert.deepEqual(await admin.call("MGET", "{event:42}:seats", "{event:42}:page"), ["17", "<html>"]);
    const cross = await admin.raw("MGET", "a", "b");
    assert.equal(
      (cross as { message: string }).message,
      "CROSSSLOT Keys in request don't hash to the same slot",
    );
    // The scatter-gather a client does instead: group the keys by slot, one MGET per group.
    const spread = ["a", "b", "c", "d"];
    await Promise.all(spread.map((key) => redis.set(key, key.toUpperCase())));
    const gathered = await Promise.all(spread.map((key) => redis.mget(key)));
    assert.deepEqual(gathered.flat(), ["A", "B", "C", "D"]);
  });

  test("CA-17 a replica serves reads after READONLY, and redirects without it", async () => {
    const redis = harness.ioredis();
    await redis.set("profile:7", "ada");
    const owner = await harness.ownerOf(keySlot("profile:7"));
    const replica = harness.cluster.nodes.find((node) => node.primaryIndex === owner.index)!;
    const admin = await harness.admin(replica.index);
    await waitUntil("the write to reach the replica", 5_000, async () => {
      await admin.raw("READONLY");
      return (await admin.raw("GET", "profile:7")) === "ada";
    });
    await admin.call("READWRITE");
    const moved = (await admin.raw("GET", "profile:7")) as { message: string };
    assert.equal(moved.message, `MOVED ${keySlot("profile:7")} ${owner.host}:${owner.port}`);
    const write = (await admin.raw("SET", "profile:7", "x")) as { message: string };
    assert.match(write.message, /^MOVED /, "a replica never takes a write, READONLY or not");
    const reader = harness.ioredis({ scaleReads: "slave" });
    assert.equal(await reader.get("profile:7"), "ada");
  });

  test("CA-05 -ASK during a migration: ASKING reaches the target, the map is not updated until NODE", async () => {
    const slot = keySlot("migrating:key");
    const source = await harness.ownerOf(slot);
    const target = harness.cluster.nodes[(source.index + 1) % 3]!;
    const src = await harness.admin(source.index);
    const dst = await harness.admin(target.index);
    await src.call("SET", "migrating:key", "v1");
    await dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id);
    await src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id);
    assert.equal(await src.call("GET", "migrating:key"), "v1", "a key still here is served here");
    await src.call("MIGRATE", target.host, target.port, "", 0, 2_000, "KEYS", "migrating:key");
    const ask = (await src.raw("GET", "migrating:key")) as { message: string };
    assert.equal(ask.message, `ASK ${slot} ${target.host}:${target.port}`);
    const moved = (await dst.raw("GET", "migrating:key")) as { message: string };
    assert.equal(
      moved.message,
      `MOVED ${slot} ${source.host}:${source.port}`,
      "without ASKING the target redirects",
    );
    await dst.call("ASKING");
    assert.equal(await dst.call("GET", "migrating:key"), "v1");
    await dst.call("CLUSTER", "SETSLOT", slot, "NODE", target.id);
    await src.call("CLUSTER", "SETSLOT", slot, "NODE", target.id);
    const after = (await src.raw("GET", "migrating:key")) as { message: string };
    assert.equal(after.message, `MOVED ${slot} ${target.host}:${target.port}`);
    assert.equal(await harness.ioredis().get("migrating:key"), "v1");
  });

  test("CA-05 live reshard of 400 slots while 4 ioredis loops write and read: no error, no lost key", async () => {
    const redis: Cluster = harness.ioredis();
    const source = await harness.ownerOf(0);
    const target = harness.cluster.nodes[(source.index + 1) % 3]!;
    const hot = keysInSlots("hot", 1_500, 0, 399);
    const expected = new Map<string, string>();
    await Promise.all(hot.map((key) => redis.set(key, "0").then(() => expected.set(key, "0"))));
    let running = true;
    let operations = 0;
    const errors: string[] = [];
    const worker = async (id: number) => {
      for (let round = 0; running && round < 1_000_000; round++) {
        const key = hot[(round * 7 + id * 389) % hot.length]!;
        const value = `${id}:${round}`;
        try {
          // Each key is written by one worker only (the stride keeps workers apart), so the last write wins.
          if (hot.indexOf(key) % 4 === id) {
            await redis.set(key, value);
            expected.set(key, value);
          }
          const read = await redis.get(key);
          if (read !== expected.get(key)) errors.push(`${key}: read ${read}, expected ${expected.get(key)}`);
          operations += 1;
        } catch (error) {
          errors.push(`${key}: ${(error as Error).message}`);
        }
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    const slots = Array.from({ length: 400 }, (_, slot) => slot);
    const report = await harness.move(source.index, target.index, slots);
    running = false;
    await Promise.all(workers);
    assert.deepEqual(errors.slice(0, 5), [], `${errors.length} errors`);
    assert.ok(operations > 500, `the loops kept running during the reshard (${operations} operations)`);
    assert.ok(report.keys >= hot.length * 0.9, `${report.keys} keys migrated`);
    const values = await Promise.all(hot.map((key) => redis.get(key)));
    assert.deepEqual(
      values,
      hot.map((key) => expected.get(key)),
      "every key has its last written value",
    );
    const src = await harness.admin(source.index);
    const dst = await harness.admin(target.index);
    assert.equal(await src.call("CLUSTER", "COUNTKEYSINSLOT", 0), 0);
    assert.ok(((await dst.call("CLUSTER", "COUNTKEYSINSLOT", 0)) as number) > 0);
    assert.equal((await harness.ownerOf(0, 2)).id, target.id, "the third primary learned the new owner");
  });

  test("CA-09 cache-aside with a stale slot map: old owner → -MOVED → map updated → miss → database → SET EX 300", async () => {
    const redis = harness.ioredis();
    await redis.get("warm-up"); // the client has fetched its slot map
    const slot = keySlot("event:42");
    const oldOwner = await harness.ownerOf(slot);
    const newOwner = harness.cluster.nodes[(oldOwner.index + 1) % 3]!;
    const address = (node: { host: string; port: number }) => `${node.host}:${node.port}`;
    assert.equal(
      redis.slots[slot]![0],
      address(oldOwner),
      "slot computed from the cached map: the old owner",
    );
    await harness.move(oldOwner.index, newOwner.index, [slot]);
    // Every node (replicas learn by gossip) knows the new owner; only the client's map is stale.
    await harness.converged(slot, newOwner.index);
    assert.equal(redis.slots[slot]![0], address(oldOwner), "the client's map is stale now");
    const old = await harness.admin(oldOwner.index);
    const movedCount = async () =>
      Number(/cluster_stats_redirects_moved:(\d+)/.exec((await old.call("CLUSTER", "INFO")) as string)![1]);
    const movedBefore = await movedCount();
    const database = { reads: 0, rows: new Map([["event:42", "row of event 42"]]) };
    const cacheAside = async (key: string) => {
      const cached = await redis.get(key);
      if (cached !== null) return { value: cached, from: "cache" };
      database.reads += 1;
      const row = database.rows.get(key)!;
      await redis.set(key, row, "EX", 300);
      return { value: row, from: "database" };
    };
    assert.deepEqual(await cacheAside("event:42"), { value: "row of event 42", from: "database" });
    assert.equal(await movedCount(), movedBefore + 1, "the old owner answered -MOVED once");
    assert.equal(redis.slots[slot]![0], address(newOwner), "the client updated its map from the redirect");
    const owner = await harness.admin(newOwner.index);
    const ttl = (await owner.call("TTL", "event:42")) as number;
    assert.ok(ttl > 295 && ttl <= 300, `SET … EX 300 landed on the new owner (TTL ${ttl})`);
    assert.deepEqual(await cacheAside("event:42"), { value: "row of event 42", from: "cache" });
    assert.equal(database.reads, 1, "the second read is a hit");
  });

  test("CA-03 a node joins and about 1/N of the slots and keys move to it while a client keeps working", async () => {
    const redis = harness.ioredis();
    const keys = Array.from({ length: 3_000 }, (_, i) => `item:${i}`);
    await Promise.all(keys.map((key) => redis.set(key, key)));
    const joined = await harness.cluster.addNode();
    const admin = await harness.admin(joined.index);
    const slotsBy = new Map<string, number[]>();
    const view = await harness.admin(0);
    for (const [first, last, [, , id]] of (await view.call("CLUSTER", "SLOTS")) as Array<
      [number, number, [string, number, string]]
    >) {
      const owned = slotsBy.get(id) ?? [];
      for (let slot = first; slot <= last; slot++) owned.push(slot);
      slotsBy.set(id, owned);
    }
    const moves = planJoin(slotsBy, joined.id);
    let running = true;
    let failures = 0;
    let reads = 0;
    const slow: string[] = [];
    const reader = (async () => {
      for (let i = 0; running && i < 1_000_000; i++) {
        const key = keys[(i * 13) % keys.length]!;
        const startMs = performance.now();
        const value = await redis.get(key).catch((error: Error) => `error: ${error.message}`);
        if (value !== key) failures += 1;
        if (performance.now() - startMs > 100)
          slow.push(`${key}: ${Math.round(performance.now() - startMs)} ms, ${value}`);
        reads += 1;
      }
    })();
    let movedKeys = 0;
    let movedSlots = 0;
    for (const move of moves) {
      const from = harness.cluster.nodes.find((node) => node.id === move.from)!;
      const report = await harness.move(from.index, joined.index, move.slots);
      movedKeys += report.keys;
      movedSlots += report.slots;
    }
    running = false;
    await reader;
    assert.equal(failures, 0, `every read during the join found its key (${reads} reads)`);
    assert.ok(reads > 100, `the client kept working (${reads} reads; slow: ${slow.slice(0, 5).join("; ")})`);
    assert.ok(Math.abs(movedSlots - 16_384 / 4) <= 3, `${movedSlots} slots moved, 1/4 of 16384`);
    // This test's keys are spread evenly; the earlier tests' are not (a reshard packed 1 500 into 400 slots).
    const movedSet = new Set(moves.flatMap((move) => move.slots));
    const movedOfMine = keys.filter((key) => movedSet.has(keySlot(key))).length;
    const share = movedOfMine / keys.length;
    assert.ok(share > 0.2 && share < 0.3, `${(share * 100).toFixed(1)}% of the keys moved (1/N = 25%)`);
    assert.ok(movedKeys >= movedOfMine, `the reshard moved ${movedKeys} keys`);
    assert.ok(((await admin.call("DBSIZE")) as number) >= movedOfMine, "the new node holds them");
    assert.deepEqual(await Promise.all(keys.slice(0, 200).map((key) => redis.get(key))), keys.slice(0, 200));
  });
});
