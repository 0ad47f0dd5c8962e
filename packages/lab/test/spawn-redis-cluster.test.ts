import assert from "node:assert/strict";
import { existsSync, readlinkSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Cluster, Redis } from "ioredis";
import { labErrors } from "../src/lab-errors.ts";
import {
  SLOT_COUNT,
  type SpawnedRedisCluster,
  slotRanges,
  spawnRedisCluster,
} from "../src/spawn-redis-cluster.ts";
import { connectErrorCode, eventually, runThenDie } from "./process-helpers.ts";

const spawnClusterPath = fileURLToPath(new URL("../src/spawn-redis-cluster.ts", import.meta.url));

/** A client that fails fast instead of reconnecting or queueing. */
function nodeClient(port: number): Redis {
  const client = new Redis({
    host: "127.0.0.1",
    port,
    commandTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  return client;
}

async function onNode<T>(port: number, body: (client: Redis) => Promise<T>): Promise<T> {
  const client = nodeClient(port);
  try {
    return await body(client);
  } finally {
    client.disconnect();
  }
}

function clusterClient(cluster: SpawnedRedisCluster): Cluster {
  const client = new Cluster([...cluster.startupNodes], {
    enableOfflineQueue: true,
    clusterRetryStrategy: () => null,
    redisOptions: { commandTimeout: 1_000, maxRetriesPerRequest: 0 },
  });
  client.on("error", () => {});
  return client;
}

const tempDirOf = (pid: number | undefined) => readlinkSync(`/proc/${pid}/cwd`);

test("slot ranges split 0..16383 into contiguous, nearly equal parts", () => {
  assert.deepEqual(slotRanges(3), [
    [0, 5460],
    [5461, 10921],
    [10922, 16383],
  ]);
  assert.deepEqual(slotRanges(1), [[0, SLOT_COUNT - 1]]);
});

test("a cluster shape outside the bounds is refused before anything starts", async () => {
  for (const shape of [{ primaries: 0 }, { primaries: 17 }, { replicasPerPrimary: 3 }, { primaries: 1.5 }]) {
    await assert.rejects(spawnRedisCluster(shape), (e) => labErrors.is(e, "LAB_CLUSTER_INVALID"));
  }
});

describe("spawnRedisCluster, 3 primaries", { timeout: 60_000 }, () => {
  let cluster: SpawnedRedisCluster;
  before(async () => {
    cluster = await spawnRedisCluster();
  });
  after(async () => {
    await cluster.stop();
  });

  test("every node is a primary of one slot range, reports cluster_state:ok and knows all three", async () => {
    assert.equal(cluster.nodes.length, 3);
    assert.equal(new Set(cluster.nodes.map((node) => node.id)).size, 3);
    assert.equal(new Set(cluster.nodes.map((node) => tempDirOf(node.engine.pid))).size, 3, "own temp dirs");
    for (const [i, node] of cluster.nodes.entries()) {
      assert.equal(node.role, "primary");
      assert.notEqual(node.port, 6379);
      assert.deepEqual(node.slotRanges, [slotRanges(3)[i]]);
      await onNode(node.port, async (client) => {
        const info = String(await client.call("CLUSTER", "INFO"));
        assert.match(info, /cluster_state:ok/);
        assert.match(info, /cluster_slots_ok:16384/);
        assert.match(info, /cluster_known_nodes:3/);
        assert.equal(String(await client.call("CLUSTER", "MYID")), node.id);
        assert.deepEqual(await client.config("GET", "save"), ["save", ""]);
        assert.deepEqual(await client.config("GET", "appendonly"), ["appendonly", "no"]);
      });
    }
  });

  test("a cluster client spreads keys over the nodes by slot; a node refuses a cross-slot command", async () => {
    const client = clusterClient(cluster);
    try {
      const keys = ["{a}:k", "{b}:k", "{c}:k"];
      for (const key of keys) await client.set(key, key);
      for (const key of keys) {
        const slot = await cluster.slotOf(key);
        const owner = cluster.primaryForSlot(slot);
        assert.equal(await onNode(owner.port, (c) => c.get(key)), key, `${key} lives on its slot's node`);
      }
      assert.equal(new Set(await Promise.all(keys.map((k) => cluster.slotOf(k)))).size, 3);
      await assert.rejects(client.mget("{a}:k", "{b}:k"), /CROSSSLOT/);
      assert.deepEqual(await client.mget("{a}:k", "{a}:missing"), ["{a}:k", null]);
    } finally {
      client.disconnect();
    }
  });

  test("a killed primary restarts as the same node, and the cluster is ok again", async () => {
    const node = cluster.primaries[1]!;
    await node.engine.kill();
    await node.engine.restart();
    await cluster.waitUntilOk(10_000);
    await onNode(node.port, async (client) => {
      assert.equal(String(await client.call("CLUSTER", "MYID")), node.id, "nodes.conf kept its identity");
    });
  });
});

test("3 + 3: each replica follows its primary and receives its writes", { timeout: 60_000 }, async () => {
  const cluster = await spawnRedisCluster({ primaries: 3, replicasPerPrimary: 1 });
  try {
    assert.equal(cluster.primaries.length, 3);
    assert.equal(cluster.replicas.length, 3);
    for (const replica of cluster.replicas) {
      const primary = cluster.nodes.find((node) => node.id === replica.primaryId)!;
      assert.equal(primary.role, "primary");
      const role = await onNode(replica.port, (c) => c.call("ROLE") as Promise<unknown[]>);
      assert.deepEqual(role.slice(0, 4), ["slave", "127.0.0.1", primary.port, "connected"]);
      // The first key of the primary's range: write it there, WAIT for one replica.
      const key = await findKeyInSlots(cluster, primary.slotRanges[0]!);
      await onNode(primary.port, async (c) => {
        await c.set(key, "replicated");
        assert.equal(await c.wait(1, 2_000), 1);
      });
      // A replica answers reads of its primary's slots only after READONLY (else MOVED).
      const read = await onNode(replica.port, async (c) => {
        await c.call("READONLY");
        return c.get(key);
      });
      assert.equal(read, "replicated");
    }
  } finally {
    await cluster.stop();
  }
});

/** A key whose slot lies in `[first, last]` (found by asking the cluster, bounded). */
async function findKeyInSlots(cluster: SpawnedRedisCluster, [first, last]: readonly [number, number]) {
  for (let i = 0; i < 1_000; i++) {
    const key = `k${i}`;
    const slot = await cluster.slotOf(key);
    if (slot >= first && slot <= last) return key;
  }
  throw new Error("no key found in range");
}

test("stop is final for every node: ports refused, temp dirs removed; stop is idempotent", {
  timeout: 60_000,
}, async () => {
  const cluster = await spawnRedisCluster({ primaries: 1 });
  const dirs = cluster.nodes.map((node) => tempDirOf(node.engine.pid));
  await cluster.stop();
  await cluster.stop();
  for (const node of cluster.nodes) assert.equal(await connectErrorCode(node.port), "ECONNREFUSED");
  for (const dir of dirs) assert.equal(existsSync(dir), false);
});

test("every node dies with the test process, even when that is SIGKILLed", { timeout: 60_000 }, async () => {
  const body = `
    import { readlinkSync } from "node:fs";
    import { spawnRedisCluster } from ${JSON.stringify(spawnClusterPath)};
    const cluster = await spawnRedisCluster({ primaries: 3 });
    console.log(JSON.stringify(cluster.nodes.map((n) => ({ port: n.port, dir: readlinkSync("/proc/" + n.engine.pid + "/cwd") }))));
  `;
  const nodes = await runThenDie<{ port: number; dir: string }[]>(body, "SIGKILL");
  assert.equal(nodes.length, 3);
  for (const { port, dir } of nodes) {
    await eventually(async () => (await connectErrorCode(port)) === "ECONNREFUSED");
    await eventually(() => !existsSync(dir));
  }
});
