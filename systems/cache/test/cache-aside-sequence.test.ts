/**
 * CA-09, the text's cache-aside sequence diagram (004 §5) end to end, on a real Redis
 * Cluster whose slot for event:42 has moved since the client loaded its map:
 *
 *   slot = CRC16("event:42") mod 16384 → node-b (cached map)
 *   GET event:42 → node-b → -MOVED <slot> node-c → map updated
 *   GET event:42 → node-c → nil (miss) → SELECT … from the database → SET event:42 … EX 300 on node-c
 *
 * The trace is the router's events plus the database's reads, in order.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type SpawnedRedisCluster, spawnRedisCluster } from "@casebook/lab/spawn-redis-cluster";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import type { ClusterRouter } from "../src/client/cluster-router.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { callNode, moveSlot } from "./client-slot-migration.ts";

let cluster: SpawnedRedisCluster;
before(async () => {
  cluster = await spawnRedisCluster({ primaries: 3 });
});
after(() => cluster?.stop());

test("CA-09 stale map: GET old owner -> MOVED -> map updated -> GET new owner -> miss -> DB read -> SET EX 300", async () => {
  const trace: string[] = [];
  const at = (address: string) =>
    address.endsWith(`:${nodeB.port}`) ? "node-b" : address.endsWith(`:${nodeC.port}`) ? "node-c" : address;
  const key = "event:42";
  const slot = slotOfKey(key);
  const nodeB = cluster.primaryForSlot(slot);
  const nodeC = cluster.primaries.find((node) => node !== nodeB)!;
  const client = await CacheClient.cluster({
    seeds: cluster.startupNodes.map((node) => `127.0.0.1:${node.port}`),
    onEvent: (event) => {
      if (event.type === "send") trace.push(`${event.command} ${event.key} -> ${at(event.address)}`);
      if (event.type === "moved") trace.push(`MOVED ${event.slot} ${at(event.to)}: map updated`);
    },
  });
  const database = new Map([[42, { id: 42, name: "Opening night" }]]);
  let databaseReads = 0;
  const pages = new CacheAside<{ id: number; name: string }>({
    client,
    ttlS: 300,
    jitter: 0, // the diagram's exact EX 300
    lease: false, // the diagram has no lease: one client, one miss
    earlyRefreshBeta: 0, // plain values, as the diagram writes them
  });
  try {
    assert.equal(
      (client.router as ClusterRouter).ownerOf(slot),
      `127.0.0.1:${nodeB.port}`,
      "map cached: node-b",
    );
    await moveSlot(cluster, slot, nodeB, nodeC); // the slot migrates behind the client's back
    const page = await pages.getOrLoad(key, async () => {
      databaseReads += 1;
      trace.push("SELECT event 42 -> database");
      return database.get(42)!;
    });
    assert.deepEqual(page, { id: 42, name: "Opening night" });
    assert.deepEqual(trace, [
      "GET event:42 -> node-b",
      `MOVED ${slot} node-c: map updated`,
      "GET event:42 -> node-c",
      "SELECT event 42 -> database",
      "SET event:42 -> node-c",
    ]);
    assert.equal(databaseReads, 1);
    assert.equal(pages.stats.miss, 1);
    const ttlS = Number(await callNode(nodeC, "TTL", key));
    assert.ok(ttlS > 295 && ttlS <= 300, `SET … EX 300 on node-c, TTL now ${ttlS}`);
    assert.equal(await callNode(nodeC, "GET", key), JSON.stringify(page));
    // And the next read is a hit on node-c, straight from the updated map.
    trace.length = 0;
    assert.deepEqual(await pages.getOrLoad(key, async () => assert.fail("no second load")), page);
    assert.deepEqual(trace, ["GET event:42 -> node-c"]);
  } finally {
    await client.close();
  }
});
