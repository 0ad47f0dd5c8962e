/**
 * Ring mode against live cache nodes (CA-03: keys are partitioned across nodes; nodes join
 * and leave without restarting clients; CA-10 on real nodes): 2,000 keys over 4 nodes,
 * then a 5th joins the running client and ~1/5 of the keys miss once (all of them now
 * owned by the newcomer), then a node leaves and only its keys miss. A dead node fails
 * only its own keys, with a typed error.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CacheClient } from "../src/client/cache-client.ts";
import { clientErrors } from "../src/client/client-errors.ts";
import type { RingRouter } from "../src/client/ring-router.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const address = (node: TestNode) => `127.0.0.1:${node.port}`;
const KEYS = Array.from({ length: 2_000 }, (_, i) => `event:${i}`);

describe("ring mode over live cache nodes", () => {
  let nodes: TestNode[];
  let client: CacheClient;
  before(async () => {
    nodes = await Promise.all(Array.from({ length: 5 }, () => startCacheNode()));
    client = CacheClient.ring({ nodes: nodes.slice(0, 4).map(address), vnodes: 160 });
  });
  after(async () => {
    await client?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });
  const ring = () => client.router as RingRouter;

  test("CA-03 2,000 keys are partitioned over 4 nodes, each key stored only on its ring owner", async (t) => {
    await Promise.all(KEYS.map((key) => client.set(key, key, { exS: 300 })));
    const sizes = nodes.slice(0, 4).map((node) => node.keyspace.size);
    t.diagnostic(`keys per node: ${sizes.join(" / ")}`);
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      2_000,
      "each key on exactly one node",
    );
    const maxOverAvg = Math.max(...sizes) / 500;
    assert.ok(
      maxOverAvg < 1.35,
      `160 vnodes keep the busiest node near its share: max/avg ${maxOverAvg.toFixed(2)}`,
    );
    for (const node of nodes.slice(0, 4)) {
      const owned = KEYS.filter((key) => ring().ownerOf(key) === address(node));
      assert.equal(node.keyspace.size, owned.length);
    }
  });

  test("CA-03 a 5th node joins the running client: ~1/5 of the keys miss once, all of them now the newcomer's", async (t) => {
    ring().addNode(address(nodes[4]!));
    const values = await client.mget(KEYS);
    const missed = KEYS.filter((_, i) => values[i] === null);
    t.diagnostic(
      `after 4 -> 5 nodes: ${missed.length} of 2,000 keys miss (${(missed.length / 20).toFixed(1)}%)`,
    );
    assert.ok(missed.length > 250 && missed.length < 550, `about 1/5 moved: ${missed.length}`);
    for (const key of missed) assert.equal(ring().ownerOf(key), address(nodes[4]!), key);
    assert.ok(
      values.every((value, i) => value === null || value === KEYS[i]),
      "hits are the right values",
    );
    // The misses are refilled on the new owner; the old copies just age out by TTL.
    await Promise.all(missed.map((key) => client.set(key, key, { exS: 300 })));
    assert.ok((await client.mget(KEYS)).every((value, i) => value === KEYS[i]));
  });

  test("CA-03 a node leaves the running client: only its keys miss, every other key still hits", async () => {
    const leaving = nodes[1]!;
    const itsKeys = new Set(KEYS.filter((key) => ring().ownerOf(key) === address(leaving)));
    await ring().removeNode(address(leaving));
    assert.deepEqual([...ring().nodes()].sort(), [0, 2, 3, 4].map((i) => address(nodes[i]!)).sort());
    const values = await client.mget(KEYS);
    KEYS.forEach((key, i) => {
      if (itsKeys.has(key)) assert.equal(values[i], null, `${key} moved to a node that never had it`);
      else assert.equal(values[i], key, `${key} still hits`);
    });
    assert.equal(ring().openConnections().has(address(leaving)), false, "its connections were closed");
  });

  test("a dead node fails only its own keys (typed), the others keep working", async () => {
    const dead = nodes[3]!;
    const deadKey = KEYS.find((key) => ring().ownerOf(key) === address(dead))!;
    const liveKey = KEYS.find((key) => ring().ownerOf(key) !== address(dead))!;
    await client.set(liveKey, liveKey, { exS: 300 }); // it may have lived on the node removed above
    await dead.close();
    await assert.rejects(
      client.get(deadKey),
      (error) =>
        clientErrors.is(error, "CACHE_CLIENT_CONNECT_FAILED") ||
        clientErrors.is(error, "CACHE_CLIENT_CONNECTION_LOST"),
    );
    assert.equal(await client.get(liveKey), liveKey);
    await ring().removeNode(address(dead)); // the operator (or a health check) takes it off the ring
    assert.equal(await client.get(deadKey), null, "its keys now miss on their new owner instead of failing");
  });
});
