/**
 * CA-13 maxmemory holds under load, and the headroom around it is planned.
 * A load of random-size SETs (1 B … 32 KiB values, several pipelining connections,
 * several policies) runs against a node whose keyspace checks used ≤ maxmemory after
 * every single write; the headroom calculator reproduces the text's 70–80% of RAM.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { Redis } from "ioredis";
import type { EvictionPolicyName } from "../src/domain/eviction-policy.ts";
import {
  DEFAULT_DATA_SHARE,
  GIB,
  MEASURED_NODE_FRAGMENTATION,
  planMaxmemory,
} from "../src/domain/headroom.ts";
import { Keyspace } from "../src/domain/keyspace.ts";
import { startCacheNode } from "./cache-node.ts";

/** A keyspace that checks the maxmemory invariant after every write the server makes. */
class CheckedKeyspace extends Keyspace {
  writes = 0;
  peakBytes = 0;
  override set(key: string, value: string, expiresAtMs: number): boolean {
    const stored = super.set(key, value, expiresAtMs);
    this.#check();
    return stored;
  }
  override setMany(keys: readonly string[], values: readonly string[]): boolean {
    const stored = super.setMany(keys, values);
    this.#check();
    return stored;
  }
  #check(): void {
    this.writes += 1;
    this.peakBytes = Math.max(this.peakBytes, this.usedBytes);
    if (this.usedBytes > this.maxmemoryBytes) {
      throw new Error(
        `used_memory ${this.usedBytes} > maxmemory ${this.maxmemoryBytes} after write ${this.writes}`,
      );
    }
  }
}

const MAXMEMORY_BYTES = 2 * 1024 * 1024;
const CONNECTIONS = 4;
const SETS_PER_CONNECTION = 1_000;
/** Values up to 32 KiB: 1.6% of maxmemory each, so evictions happen in bursts of several keys. */
const MAX_VALUE_BYTES = 32 * 1024;

async function loadWithRandomSets(
  policy: EvictionPolicyName,
): Promise<{ keyspace: CheckedKeyspace; oomReplies: number }> {
  const keyspace = new CheckedKeyspace({
    clock: systemClock,
    random: seededRandom(policy),
    maxmemoryBytes: MAXMEMORY_BYTES,
    policy,
  });
  const node = await startCacheNode({ keyspace });
  const clients = Array.from(
    { length: CONNECTIONS },
    () => new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 }),
  );
  let oomReplies = 0;
  try {
    await Promise.all(clients.map((c) => c.connect()));
    await Promise.all(
      clients.map(async (c, index) => {
        const random = seededRandom(`${policy}-${index}`);
        const pipeline = c.pipeline();
        for (let i = 0; i < SETS_PER_CONNECTION; i++) {
          const size = 1 + Math.floor(random.next() * MAX_VALUE_BYTES);
          const key = `load:${index}:${Math.floor(random.next() * 2_000)}`;
          // Half the keys with a TTL, so volatile policies have candidates.
          if (random.next() < 0.5) pipeline.set(key, "x".repeat(size), "EX", 600);
          else pipeline.set(key, "x".repeat(size));
        }
        for (const [error] of (await pipeline.exec())!) {
          if (error === null) continue;
          assert.equal(error.message, "OOM command not allowed when used memory > 'maxmemory'.");
          oomReplies += 1;
        }
      }),
    );
    const info = await clients[0]!.info("memory");
    const used = Number(/used_memory:(\d+)/.exec(info)![1]);
    assert.ok(used <= MAXMEMORY_BYTES, `INFO used_memory ${used}`);
  } finally {
    for (const c of clients) c.disconnect();
    await node.close();
  }
  return { keyspace, oomReplies };
}

describe("maxmemory under load", () => {
  for (const policy of ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-ttl"] as const) {
    test(`CA-13 ${policy}: used_memory ≤ maxmemory after every one of 4 000 random-size SETs`, async () => {
      const { keyspace, oomReplies } = await loadWithRandomSets(policy);
      assert.equal(
        keyspace.writes,
        CONNECTIONS * SETS_PER_CONNECTION,
        "every SET reached the checked keyspace",
      );
      assert.ok(keyspace.stats.evictedKeys > 0, "the load overflowed maxmemory many times over");
      assert.ok(keyspace.peakBytes > MAXMEMORY_BYTES * 0.9, "it ran close to the limit");
      if (policy.startsWith("allkeys")) assert.equal(oomReplies, 0, `${policy} always finds a victim`);
      // volatile-ttl may only evict keys with a TTL: once keys without one fill memory, writes get -OOM.
      else assert.ok(keyspace.stats.volatileKeys < keyspace.stats.keys);
    });
  }

  test("CA-13 noeviction under the same load: used_memory ≤ maxmemory, the overflow gets -OOM", async () => {
    const { keyspace, oomReplies } = await loadWithRandomSets("noeviction");
    assert.ok(oomReplies > 0);
    assert.equal(keyspace.stats.evictedKeys, 0);
  });

  test("CA-13 headroom: plan ~70–80% of RAM for data (fragmentation, replication buffers, fork, OS)", () => {
    const node = { ramBytes: 64 * GIB, replicationBufferBytes: 1 * GIB, reservedBytes: 2 * GIB };
    const light = planMaxmemory({ ...node, fragmentationRatio: 1.1, forkCopyShare: 0.1 });
    const heavy = planMaxmemory({ ...node, fragmentationRatio: 1.15, forkCopyShare: 0.2 });
    assert.ok(light.dataShareOfRam > 0.7 && light.dataShareOfRam < 0.8, `${light.dataShareOfRam}`);
    assert.ok(heavy.dataShareOfRam > 0.7 && heavy.dataShareOfRam < 0.8, `${heavy.dataShareOfRam}`);
    assert.equal(Math.round(light.maxmemoryBytes / GIB), 51, "≈ 51 GB of a 64 GB node");
    assert.ok(DEFAULT_DATA_SHARE >= 0.7 && DEFAULT_DATA_SHARE <= 0.8);
    // Without persistence or replicas (this node today), more of the RAM can hold data.
    const bare = planMaxmemory({
      ...node,
      replicationBufferBytes: 0,
      fragmentationRatio: 1.1,
      forkCopyShare: 0,
    });
    assert.ok(bare.dataShareOfRam > light.dataShareOfRam);
  });

  test("CA-13 this node's own headroom: its measured RSS growth per accounted byte (1.1) plans ~88% of a bare node's RAM", () => {
    const plan = planMaxmemory({
      ramBytes: 64 * GIB,
      replicationBufferBytes: 0,
      reservedBytes: 2 * GIB,
      fragmentationRatio: MEASURED_NODE_FRAGMENTATION,
      forkCopyShare: 0,
    });
    // Data off the V8 heap: like Redis's jemalloc, not the 2.35 of values kept as JS strings.
    assert.ok(plan.dataShareOfRam > 0.85 && plan.dataShareOfRam < 0.9, `${plan.dataShareOfRam}`);
  });

  test("the calculator refuses inputs that leave nothing for data", () => {
    assert.throws(
      () =>
        planMaxmemory({
          ramBytes: GIB,
          replicationBufferBytes: GIB,
          reservedBytes: 0,
          fragmentationRatio: 1,
          forkCopyShare: 0,
        }),
      RangeError,
    );
    assert.throws(
      () =>
        planMaxmemory({
          ramBytes: GIB,
          replicationBufferBytes: 0,
          reservedBytes: 0,
          fragmentationRatio: 0.9,
          forkCopyShare: 0,
        }),
      RangeError,
    );
  });
});
