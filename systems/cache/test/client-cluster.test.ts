/**
 * Cluster mode against a real Redis Cluster of redis-server processes (lab's spawner):
 * the protocol our node speaks in cluster mode is the same one, so a client that routes,
 * follows -MOVED and -ASK and scatter-gathers MGET here does it there too.
 *
 * CA-05 slot = CRC16 mod 16384 with hash tags; a non-owner answers -MOVED, the client
 *       updates its map and retries there.
 * CA-06 the client hashes the key, keeps the map, sends straight to the owner; -ASK
 *       during a migration goes to the target with ASKING and leaves the map alone.
 * CA-07 MGET over several nodes is a scatter-gather that keeps the caller's order;
 *       hash-tagged keys share a slot and ride one MGET.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import {
  type RedisClusterNode,
  type SpawnedRedisCluster,
  spawnRedisCluster,
} from "@casebook/lab/spawn-redis-cluster";
import { CacheClient } from "../src/client/cache-client.ts";
import { clientErrors } from "../src/client/client-errors.ts";
import type { ClusterRouter } from "../src/client/cluster-router.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { beginMigration, callNode, finishMigration, moveKeys, moveSlot } from "./client-slot-migration.ts";
import { waitUntil } from "./cluster-harness.ts";

function otherPrimary(cluster: SpawnedRedisCluster, slot: number) {
  const source = cluster.primaryForSlot(slot);
  return { source, target: cluster.primaries.find((node) => node !== source)! };
}

const address = (port: number) => `127.0.0.1:${port}`;

type SlotsReply = Array<[number, number, ...Array<[string, number, string?]>]>;

/** Whether `node`'s CLUSTER SLOTS lists `replica` among the replicas of the range holding `slot`. */
async function listsReplicaOf(
  node: RedisClusterNode,
  slot: number,
  replica: RedisClusterNode,
): Promise<boolean> {
  const ranges = (await callNode(node, "CLUSTER", "SLOTS")) as SlotsReply;
  const range = ranges.find(([first, last]) => slot >= first && slot <= last);
  return range?.slice(3).some((entry) => (entry as [string, number])[1] === replica.port) ?? false;
}

describe("cluster client against a real Redis Cluster (3 primaries)", () => {
  let cluster: SpawnedRedisCluster;
  let client: CacheClient;
  let events: RouterEvent[] = [];

  before(async () => {
    cluster = await spawnRedisCluster({ primaries: 3 });
    client = await CacheClient.cluster({
      seeds: cluster.startupNodes.map((node) => address(node.port)),
      onEvent: (event) => events.push(event),
    });
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });
  const router = () => client.router as ClusterRouter;
  const take = () => {
    const taken = events;
    events = [];
    return taken;
  };

  test("CA-05 the client's slot of a key is the cluster's (CLUSTER KEYSLOT), hash tags included", async () => {
    assert.equal(slotOfKey("123456789"), 0x31c3 % 16_384);
    for (const key of ["123456789", "event:42", "{event:42}:seats", "{event:42}:page", "{}x", "a{b}c", "é"]) {
      assert.equal(slotOfKey(key), await cluster.slotOf(key), key);
    }
    assert.equal(slotOfKey("{event:42}:seats"), slotOfKey("{event:42}:page"));
  });

  test("CA-06 with a fresh map every command goes straight to the slot's owner: no redirects", async () => {
    take();
    const keys = Array.from({ length: 300 }, (_, i) => `direct:${i}`);
    await Promise.all(keys.map((key) => client.set(key, key, { exS: 60 })));
    assert.deepEqual(await Promise.all(keys.map((key) => client.get(key))), keys);
    const seen = take();
    assert.equal(seen.filter((event) => event.type !== "send").length, 0, "no MOVED, ASK or retry");
    for (const event of seen) {
      if (event.type !== "send") continue;
      assert.equal(event.address, address(cluster.primaryForSlot(slotOfKey(event.key)).port), event.key);
    }
    const owners = new Set(seen.map((event) => (event.type === "send" ? event.address : "")));
    assert.equal(owners.size, 3, "300 keys spread over all three primaries");
  });

  test("CA-07 MGET over three nodes is a scatter-gather in the caller's order; a hash tag keeps keys on one node", async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `sg:${i}`);
    await Promise.all(keys.map((key) => client.set(key, `v:${key}`, { exS: 60 })));
    take();
    const values = await client.mget([...keys, "sg:missing"]);
    assert.deepEqual(values, [...keys.map((key) => `v:${key}`), null]);
    const sends = take().filter((event) => event.type === "send");
    const nodes = new Set(sends.map((event) => (event.type === "send" ? event.address : "")));
    assert.equal(nodes.size, 3, "the gather touched every node");
    assert.equal(
      sends.length,
      new Set([...keys, "sg:missing"].map((key) => slotOfKey(key))).size,
      "one MGET per slot",
    );
    // A cluster-unaware MGET of keys in two slots is refused by the node itself.
    const node = cluster.primaryForSlot(slotOfKey(keys[0]!));
    const mixed = keys.filter((key) => cluster.primaryForSlot(slotOfKey(key)) === node).slice(0, 2);
    await assert.rejects(callNode(node, "MGET", ...mixed), /CROSSSLOT/);
    // With a hash tag the related keys share a slot: one MGET, one node.
    await client.set("{event:42}:seats", "17", { exS: 60 });
    await client.set("{event:42}:page", "<html>", { exS: 60 });
    take();
    assert.deepEqual(await client.mget(["{event:42}:seats", "{event:42}:page"]), ["17", "<html>"]);
    assert.equal(take().filter((event) => event.type === "send").length, 1);
  });

  test("CA-05 after a slot moves the old owner answers -MOVED; the client patches its map and retries there", async () => {
    const key = "moved:event:7";
    const slot = slotOfKey(key);
    const { source, target } = otherPrimary(cluster, slot);
    await client.set(key, "before-move", { exS: 60 });
    assert.equal(router().ownerOf(slot), address(source.port));
    await moveSlot(cluster, slot, source, target);
    await assert.rejects(
      callNode(source, "GET", key),
      new RegExp(`^ReplyError: MOVED ${slot} 127\\.0\\.0\\.1:${target.port}$`),
    );
    take();
    assert.equal(await client.get(key), "before-move");
    const seen = take().filter((event) => event.type !== "refresh");
    assert.deepEqual(seen, [
      { type: "send", address: address(source.port), command: "GET", key },
      { type: "moved", slot, from: address(source.port), to: address(target.port) },
      { type: "send", address: address(target.port), command: "GET", key },
    ]);
    assert.equal(router().ownerOf(slot), address(target.port), "map updated");
    assert.equal(await client.get(key), "before-move");
    assert.deepEqual(
      take().filter((event) => event.type !== "refresh"),
      [{ type: "send", address: address(target.port), command: "GET", key }],
    );
  });

  test("CA-06 mid-migration -ASK: ASKING + command at the target, map untouched; TRYAGAIN is retried until the move ends", async () => {
    const slot = slotOfKey("{ask}");
    const { source, target } = otherPrimary(cluster, slot);
    await client.set("{ask}:stays", "on-source", { exS: 60 });
    await beginMigration(slot, source, target);
    take();
    assert.equal(await client.get("{ask}:stays"), "on-source", "a key still on the source is served there");
    assert.deepEqual(
      take().map((event) => event.type),
      ["send"],
    );
    assert.equal(await client.set("{ask}:new", "on-target", { exS: 60 }), true);
    assert.equal(await client.get("{ask}:new"), "on-target");
    const asks = take();
    assert.deepEqual(
      asks.filter((event) => event.type === "ask").length,
      2,
      "SET and GET were both asked over",
    );
    assert.ok(
      asks.some(
        (event) =>
          event.type === "ask" && event.from === address(source.port) && event.to === address(target.port),
      ),
    );
    assert.equal(router().ownerOf(slot), address(source.port), "-ASK never updates the map");
    // One key on each side: the source answers TRYAGAIN until the migration finishes.
    let finishing: Promise<void> | undefined;
    const tryagain = await CacheClient.cluster({
      seeds: [address(source.port)],
      onEvent: (event) => {
        if (event.type === "retry" && event.reason === "tryagain") {
          finishing ??= moveKeys(slot, source, target).then(() => finishMigration(cluster, slot, target));
        }
      },
    });
    try {
      assert.deepEqual(await tryagain.mget(["{ask}:stays", "{ask}:new"]), ["on-source", "on-target"]);
      assert.ok(finishing !== undefined, "the client met TRYAGAIN and retried");
      await finishing;
    } finally {
      await tryagain.close();
    }
  });

  test("a redirect loop is bounded: CACHE_CLIENT_TOO_MANY_REDIRECTS after maxRedirects hops", async () => {
    const slot = slotOfKey("{loop}");
    const { source, target } = otherPrimary(cluster, slot);
    await client.set("{loop}:a", "a", { exS: 60 });
    await beginMigration(slot, source, target);
    await moveKeys(slot, source, target);
    // The source has neither key (-ASK); the importing target has one of two (-TRYAGAIN), and the
    // migration never finishes: without a bound the client would bounce forever.
    const bounded = await CacheClient.cluster({
      seeds: [address(source.port)],
      maxRedirects: 2,
      retryBaseMs: 5,
    });
    try {
      await assert.rejects(bounded.mget(["{loop}:a", "{loop}:zzz"]), (error) => {
        assert.ok(clientErrors.is(error, "CACHE_CLIENT_TOO_MANY_REDIRECTS"), String(error));
        return true;
      });
    } finally {
      await bounded.close();
      await finishMigration(cluster, slot, target);
    }
  });
});

describe("cluster client with replicas (3 primaries + 3 replicas): replica reads, failover", () => {
  let cluster: SpawnedRedisCluster;
  before(async () => {
    cluster = await spawnRedisCluster({ primaries: 3, replicasPerPrimary: 1, nodeTimeoutMs: 500 });
  });
  after(() => cluster?.stop());

  test("CA-18 scaleReads: reads go to the slot's replicas (after READONLY), writes to its primary", async () => {
    const events: RouterEvent[] = [];
    const client = await CacheClient.cluster({
      seeds: cluster.startupNodes.map((node) => address(node.port)),
      scaleReads: "replicas",
      random: seededRandom("replica-reads"),
      onEvent: (event) => events.push(event),
    });
    try {
      const key = "replica-read:event:42";
      const primary = cluster.primaryForSlot(slotOfKey(key));
      const replica = cluster.replicas.find((node) => node.primaryId === primary.id)!;
      await client.set(key, "page", { exS: 60 });
      assert.equal(
        await callNode(primary, "WAIT", "1", "2000"),
        1,
        "replicated before the read (replication is async)",
      );
      // Redis lists a replica in CLUSTER SLOTS only once gossip says it has synced (offset > 0),
      // and each node learns that on its own schedule. refresh() reloads the map from whichever
      // node answers first (the first address in its map: slot 0's owner, not this primary), so
      // wait until EVERY node lists the replica for this slot (once listed it stays listed),
      // then refresh the client's map (a periodic refresh would do it in production).
      const slot = slotOfKey(key);
      await waitUntil(
        `every node's CLUSTER SLOTS to list ${address(replica.port)} for slot ${slot}`,
        15_000,
        async () => {
          for (const node of cluster.nodes) if (!(await listsReplicaOf(node, slot, replica))) return false;
          return true;
        },
      );
      events.length = 0;
      await (client.router as ClusterRouter).refresh();
      assert.ok(
        events.some((event) => event.type === "refresh"),
        "the map was reloaded from a node that lists the replica",
      );
      events.length = 0;
      assert.equal(await client.get(key), "page");
      // One send, no MOVED: the replica served it, which it does only on a connection that sent READONLY.
      assert.deepEqual(events, [{ type: "send", address: address(replica.port), command: "GET", key }]);
      events.length = 0;
      await client.set(key, "page-2", { exS: 60 });
      assert.deepEqual(events, [{ type: "send", address: address(primary.port), command: "SET", key }]);
    } finally {
      await client.close();
    }
  });

  test("a refused connection refreshes the map and the command reaches the promoted replica", async () => {
    const events: RouterEvent[] = [];
    const client = await CacheClient.cluster({
      seeds: cluster.startupNodes.map((node) => address(node.port)),
      maxRedirects: 12,
      retryCapMs: 500,
      onEvent: (event) => events.push(event),
    });
    try {
      const key = "failover:event:42";
      const primary = cluster.primaryForSlot(slotOfKey(key));
      await client.set(key, "v7", { exS: 60 });
      const replica = cluster.replicas.find((node) => node.primaryId === primary.id)!;
      // The write must reach the replica before the primary dies (async replication: CA-14).
      assert.equal(await callNode(primary, "WAIT", "1", "2000"), 1);
      await primary.engine.kill();
      // The failover (node timeout 500 ms: detection, then an election) takes seconds on a loaded
      // host; the client's retries are not the clock that waits for it. Once the replica is
      // master, the client still holds its stale map naming the dead primary, so the GET below
      // meets the refused connection, refreshes and retries at the new owner.
      await waitUntil("the replica to be promoted (ROLE master)", 20_000, async () => {
        const role = (await callNode(replica, "ROLE").catch(() => [])) as unknown[];
        return role[0] === "master";
      });
      assert.equal(
        (client.router as ClusterRouter).ownerOf(slotOfKey(key)),
        address(primary.port),
        "the client's map is still the stale one",
      );
      assert.equal(await client.get(key), "v7");
      const retries = events.filter((event) => event.type === "retry" && event.reason === "connect");
      assert.ok(retries.length >= 1, "the dead primary refused the connection at least once");
      assert.ok(
        events.some((event) => event.type === "refresh"),
        "the map was refreshed",
      );
      const owner = (client.router as ClusterRouter).ownerOf(slotOfKey(key));
      assert.equal(owner, address(replica.port), "the slot now belongs to the promoted replica");
    } finally {
      await client.close();
    }
  });
});
