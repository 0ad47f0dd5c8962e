/**
 * CA-17 "warm replicas serve reads (when stale reads are acceptable) and avoid a cold-node
 * stampede after failover", every clause on node processes:
 *
 * - warm: a 3-primary / 3-replica cluster; N keys of one primary filled through cache-aside
 *   (N database loads), the primary SIGKILLed, its replica promoted: reading the N keys
 *   again through cache-aside costs 0 database loads — the promoted replica had them all;
 * - cold: the same N keys on a ring of two nodes without replicas (client-side sharding);
 *   one node killed and ejected, its keys now route to the survivor, which never had them:
 *   every one of them is a database load — the stampede a warm replica avoids;
 * - stale: a replica's read after a write on the primary can return the old value until the
 *   write's replication reaches it; the window is measured per key (write acknowledged →
 *   first replica read with the new value) and printed, and bounded so a replica that stops
 *   applying the stream fails.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { keySlot } from "@casebook/kit/cluster-slot";
import { seededRandom } from "@casebook/kit/random";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import type { RingRouter } from "../src/client/ring-router.ts";
import { type AdminClient, ReplyError } from "../src/cluster/clients/cluster-admin-client.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";
import { keysInSlots, startTestCluster, type TestCluster, waitUntil } from "./cluster-harness.ts";

const KEYS = 300;
/** Bound on replication catching up, a promotion, a ring ejection: seconds on a loaded machine. */
const CONVERGE_MS = 20_000;
/** Bound on one replica read's staleness window; replication runs within milliseconds here. */
const STALE_BOUND_MS = 5_000;
/** Bound on a replica's -CLUSTERDOWN while a stalled host's majority lease is renewed (pings every node timeout / 4). */
const CLUSTERDOWN_RETRY_MS = 5_000;

/** Cache-aside over `client` with every database load counted; no lease, no coalescing: one miss, one load. */
function countedCache(client: CacheClient) {
  const db = { loads: 0 };
  const cache = new CacheAside<string>({
    client,
    ttlS: 600,
    jitter: 0,
    lease: false,
    coalesce: false,
    random: seededRandom("ca-17"),
  });
  const read = (key: string) =>
    cache.getOrLoad(key, async () => {
      db.loads += 1;
      return `row-${key}`;
    });
  return { db, read };
}

async function readAll(read: (key: string) => Promise<string>, keys: readonly string[]): Promise<void> {
  for (const key of keys) assert.equal(await read(key), `row-${key}`);
}

/**
 * GET on a replica (after READONLY). The cluster's node timeout is 1 s (short, so the second
 * test fails over quickly), and it is also the majority lease: on a stalled host a replica
 * can briefly answer -CLUSTERDOWN until the next gossip round renews it. That refusal is not
 * a value (neither old nor new): ask again, for at most CLUSTERDOWN_RETRY_MS; any other error
 * fails the test.
 */
async function replicaGet(admin: AdminClient, key: string): Promise<string | null> {
  const deadline = performance.now() + CLUSTERDOWN_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    const reply = await admin.raw("GET", key);
    if (!(reply instanceof ReplyError)) return reply as string | null;
    if (!reply.message.startsWith("CLUSTERDOWN") || performance.now() > deadline) {
      assert.fail(`GET ${key} on the replica: -${reply.message} (attempt ${attempt})`);
    }
    await sleep(50);
  }
}

async function isPrimary(admin: AdminClient): Promise<boolean> {
  return ((await admin.call("ROLE")) as string[])[0] === "master";
}

describe("CA-17 warm replicas after a failover", { timeout: 180_000 }, () => {
  let harness: TestCluster;
  let client: CacheClient;
  before(async () => {
    harness = await startTestCluster({ nodes: 6, replicas: 1, nodeTimeoutMs: 1_000 });
    const seed = harness.cluster.nodes[0]!;
    client = await CacheClient.cluster({ seeds: [`${seed.host}:${seed.port}`] });
  });
  after(async () => {
    await client?.close();
    await harness?.stop();
  });

  test(`CA-17 a replica's read lags the primary's write by a bounded staleness window`, async (t) => {
    const keys = keysInSlots("ca17:stale", 20, 0, 16_383);
    const windows: number[] = [];
    let staleReads = 0;
    for (const key of keys) {
      const owner = await harness.ownerOf(keySlot(key));
      const replica = harness.cluster.nodes.find((node) => node.primaryIndex === owner.index)!;
      const replicaAdmin = await harness.admin(replica.index);
      await replicaAdmin.call("READONLY");
      await client.set(key, "v1");
      await waitUntil(
        `v1 of ${key} on its replica`,
        CONVERGE_MS,
        async () => (await replicaGet(replicaAdmin, key)) === "v1",
      );
      await client.set(key, "v2");
      const writtenAt = performance.now();
      let seen = await replicaGet(replicaAdmin, key);
      while (seen !== "v2" && performance.now() - writtenAt < STALE_BOUND_MS) {
        assert.equal(seen, "v1", "a replica serves the old value or the new one, nothing else");
        staleReads++;
        seen = await replicaGet(replicaAdmin, key);
      }
      windows.push(performance.now() - writtenAt);
      assert.equal(seen, "v2", `${key}: the replica applied the write within ${STALE_BOUND_MS} ms`);
    }
    windows.sort((a, b) => a - b);
    t.diagnostic(
      `staleness window of replica reads over ${keys.length} writes: median ${windows[10]!.toFixed(2)} ms, ` +
        `max ${windows.at(-1)!.toFixed(2)} ms; ${staleReads} read(s) returned the old value`,
    );
  });

  test(`CA-17 ${KEYS} keys of a failed primary: 0 database loads after its warm replica is promoted`, async (t) => {
    const owner = await harness.ownerOf(0);
    const slots = (await (await harness.admin(owner.index)).call("CLUSTER", "SLOTS")) as Array<
      [number, number]
    >;
    const [first, last] = slots.find(([from]) => from === 0)!;
    const keys = keysInSlots("ca17:warm", KEYS, first, last);
    const { db, read } = countedCache(client);
    await readAll(read, keys);
    assert.equal(db.loads, KEYS, "the fill: one load per key");

    const replica = harness.cluster.nodes.find((node) => node.primaryIndex === owner.index)!;
    const replicaAdmin = await harness.admin(replica.index);
    const primaryAdmin = await harness.admin(owner.index);
    const held = (await primaryAdmin.call("DBSIZE")) as number;
    await waitUntil(
      "the replica to hold every key",
      CONVERGE_MS,
      async () => (await replicaAdmin.call("DBSIZE")) === held,
    );

    await harness.cluster.kill(owner.index);
    await waitUntil("the replica's promotion", CONVERGE_MS, () => isPrimary(replicaAdmin));
    await harness.converged(first, replica.index);
    // The client finds the new owner through a refused connection and a map refresh; a plain
    // read lets that happen before counting, so a cache error's fallback load is not counted.
    await waitUntil("the client to route to the promoted replica", CONVERGE_MS, async () =>
      client.get(keys[0]!).then(
        (value) => value !== null,
        () => false,
      ),
    );

    db.loads = 0;
    await readAll(read, keys);
    t.diagnostic(`${KEYS} keys read after the failover: ${db.loads} database loads (warm promoted replica)`);
    assert.equal(db.loads, 0, "every key was a hit on the promoted replica");
  });
});

describe("CA-17 the cold node a replica avoids", { timeout: 120_000 }, () => {
  let nodes: TestNode[] = [];
  let client: CacheClient;
  before(async () => {
    nodes = await Promise.all([startCacheNode(), startCacheNode()]);
    client = CacheClient.ring({
      nodes: nodes.map((node) => `127.0.0.1:${node.port}`),
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 2_000,
      ejection: { failureLimit: 2, retryAfterMs: 60_000 },
    });
  });
  after(async () => {
    await client?.close();
    await Promise.all(nodes.map((node) => node.close()));
  });

  test(`CA-17 ${KEYS} keys of a failed node without a replica: each is a database load on the cold node that takes them`, async (t) => {
    const keys = Array.from({ length: 2 * KEYS }, (_, i) => `ca17:cold:${i}`);
    const { db, read } = countedCache(client);
    await readAll(read, keys);
    const ring = client.router as RingRouter;
    const victim = `127.0.0.1:${nodes[0]!.port}`;
    const itsKeys = keys.filter((key) => ring.ownerOf(key) === victim);
    assert.ok(itsKeys.length > KEYS / 4, `the victim holds a share of the keys: ${itsKeys.length}`);

    await nodes[0]!.close();
    await waitUntil("the dead node's ejection", CONVERGE_MS, async () => {
      await client.get(itsKeys[0]!).catch(() => undefined);
      return ring.isEjected(victim);
    });

    db.loads = 0;
    await readAll(read, keys);
    t.diagnostic(
      `${keys.length} keys read after losing a node with no replica: ${db.loads} database loads ` +
        `(its ${itsKeys.length} keys, now on a cold node)`,
    );
    assert.equal(
      db.loads,
      itsKeys.length,
      "every key of the dead node missed on the cold one; the others hit",
    );
  });
});
