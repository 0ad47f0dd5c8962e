/**
 * The same client against OUR nodes in cluster mode (the cluster part's launcher and
 * reshard tool): the claims the Redis Cluster tests prove hold on the protocol our node
 * speaks too. CA-06 straight to the owner; CA-05 a slot moved by our reshard tool is
 * answered with -MOVED and followed; CA-07 MGET over our nodes as a scatter-gather;
 * CA-09 the cache-aside sequence with a stale map.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import type { ClusterRouter } from "../src/client/cluster-router.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { NO_FAILOVER_NODE_TIMEOUT_MS, startTestCluster, type TestCluster } from "./cluster-harness.ts";

describe("cluster client against our cache nodes in cluster mode (3 primaries)", () => {
  let harness: TestCluster;
  let client: CacheClient;
  let events: RouterEvent[] = [];
  before(async () => {
    harness = await startTestCluster({ nodes: 3, replicas: 0, nodeTimeoutMs: NO_FAILOVER_NODE_TIMEOUT_MS });
    const seeds = harness.cluster.nodes.map((node) => `${node.host}:${node.port}`);
    client = await CacheClient.cluster({ seeds, onEvent: (event) => events.push(event) });
  });
  after(async () => {
    await client?.close();
    await harness?.stop();
  });
  const take = () => {
    const taken = events;
    events = [];
    return taken;
  };
  const indexOf = (address: string) =>
    harness.cluster.nodes.findIndex((node) => address === `${node.host}:${node.port}`);

  test("CA-06 / CA-07 straight to each slot's owner; MGET over all three nodes keeps the caller's order", async (t) => {
    const keys = Array.from({ length: 60 }, (_, i) => `ours:${i}`);
    take(); // the map load at connect
    await Promise.all(keys.map((key) => client.set(key, `v:${key}`, { exS: 60 })));
    assert.deepEqual(
      await client.mget(keys),
      keys.map((key) => `v:${key}`),
    );
    const seen = take();
    const redirects = seen.filter((event) => event.type === "moved" || event.type === "ask");
    assert.deepEqual(redirects, [], "no redirects with a fresh map");
    // A connect that outlived its timeout on a loaded host is retried at the same owner (and
    // refreshes the map): not a redirect, and every send below must still go to the owner.
    const retries = seen.filter((event) => !["send", "moved", "ask"].includes(event.type));
    if (retries.length > 0) t.diagnostic(`retries under load: ${JSON.stringify(retries)}`);
    const sends = seen.flatMap((event) => (event.type === "send" ? [event] : []));
    assert.equal(new Set(sends.map((event) => event.address)).size, 3, "sends reached all three nodes");
    for (const event of sends) {
      const owner = await harness.ownerOf(slotOfKey(event.key));
      assert.equal(event.address, `${owner.host}:${owner.port}`, event.key);
    }
  });

  test("CA-05 / CA-09 after our reshard moves event:42's slot: GET old owner -> MOVED -> GET new owner -> miss -> DB -> SET EX 300", async () => {
    const key = "event:42";
    const slot = slotOfKey(key);
    const router = client.router as ClusterRouter;
    const from = indexOf(router.ownerOf(slot)!);
    const to = (from + 1) % 3;
    await harness.move(from, to, [slot]);
    await harness.converged(slot, to);
    const name = (address: string) => `node-${indexOf(address)}`;
    const pages = new CacheAside<string>({ client, ttlS: 300, jitter: 0, lease: false, earlyRefreshBeta: 0 });
    const show = (event: RouterEvent) =>
      event.type === "send"
        ? `${event.command} ${name(event.address)}`
        : event.type === "moved"
          ? `MOVED ${event.slot} ${name(event.to)}`
          : event.type;
    const trace: string[] = [];
    take();
    const page = await pages.getOrLoad(key, async () => {
      trace.push(...take().map(show), "DB");
      return "Opening night";
    });
    trace.push(...take().map(show));
    assert.equal(page, "Opening night");
    assert.deepEqual(
      trace.filter((line) => line !== "refresh"), // the background map refresh a MOVED schedules
      [`GET node-${from}`, `MOVED ${slot} node-${to}`, `GET node-${to}`, "DB", `SET node-${to}`],
    );
    assert.equal(
      router.ownerOf(slot),
      `${harness.cluster.nodes[to]!.host}:${harness.cluster.nodes[to]!.port}`,
    );
    const ttlMs = await client.pttl(key);
    assert.ok(ttlMs > 295_000 && ttlMs <= 300_000, `EX 300 on the new owner, PTTL ${ttlMs}`);
  });
});
