/**
 * CA-22: routing can live in a proxy (mcrouter) so thousands of application servers do not
 * each keep connections to every node. 1,000 application connections talk to the routing
 * proxy in front of 3 cache nodes; the nodes see only the proxy's pooled connections
 * (connectionsPerNode = 2 each), where 1,000 cluster-aware clients would hold 3,000.
 * Plus what makes the proxy transparent: a stock Redis client (ioredis) works through it,
 * binary values pass unchanged, multi-key commands are split and gathered.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { NodeConnection } from "../src/client/node-connection.ts";
import { StatusReply } from "../src/client/reply-parser.ts";
import { RingRouter } from "../src/client/ring-router.ts";
import { proxyWireOptions, RoutingProxy } from "../src/workers/routing-proxy.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

describe("CA-22 routing proxy in front of 3 cache nodes", () => {
  let nodes: TestNode[];
  let router: RingRouter;
  let proxy: RoutingProxy;
  before(async () => {
    nodes = await Promise.all([startCacheNode(), startCacheNode(), startCacheNode()]);
    router = new RingRouter({
      nodes: nodes.map((node) => `127.0.0.1:${node.port}`),
      connectionsPerNode: 2,
      ...proxyWireOptions,
    });
    proxy = new RoutingProxy({ router, port: 0 });
    await proxy.listen();
  });
  after(async () => {
    await proxy?.close();
    await router?.close();
    await Promise.all((nodes ?? []).map((node) => node.close()));
  });

  test("CA-22 1,000 application connections through the proxy use 2 upstream connections per node", async (t) => {
    // Generous timeouts: 1,000 connects at once on a shared 2-core machine are slow, not broken.
    const apps = Array.from(
      { length: 1_000 },
      () =>
        new NodeConnection({
          host: "127.0.0.1",
          port: proxy.port,
          connectTimeoutMs: 20_000,
          commandTimeoutMs: 20_000,
        }),
    );
    try {
      const sets = await Promise.all(
        apps.map((app, i) => app.send(["SET", `app:${i}`, `value-${i}`, "EX", "60"])),
      );
      assert.ok(sets.every((reply) => reply === "OK"));
      const gets = await Promise.all(apps.map((app, i) => app.send(["GET", `app:${i}`])));
      assert.deepEqual(
        gets,
        apps.map((_, i) => `value-${i}`),
      );
      assert.equal(proxy.connectionCount, 1_000, "all 1,000 application connections open at once");
      const upstream = nodes.map((node) => node.server.connectionCount);
      t.diagnostic(
        `1,000 app connections -> proxy -> 3 nodes: node connections ${upstream.join(" / ")} ` +
          `(${upstream.reduce((a, b) => a + b, 0)} total; without the proxy: 1,000 x 3 = 3,000)`,
      );
      for (const count of upstream) assert.equal(count, 2);
      const perNode = await Promise.all(nodes.map((node) => node.keyspace.size));
      assert.ok(
        perNode.every((size) => size > 200),
        `keys spread over the nodes: ${perNode.join(", ")}`,
      );
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  test("CA-22 a stock Redis client works through the proxy: statuses, integers, MGET/DEL/MSET/EXISTS split across nodes", async () => {
    const redis = new Redis({
      port: proxy.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false,
    });
    try {
      await redis.connect();
      assert.equal(await redis.ping(), "PONG");
      assert.equal(await redis.set("px:a", "1"), "OK");
      assert.equal(await redis.incrby("px:a", 41), 42);
      // Ports, hence ring points, differ per run: 40 keys cover all 3 nodes (all but ~1e-7 of runs).
      const keys = Array.from({ length: 40 }, (_, i) => `px:${i}`);
      assert.equal(new Set(keys.map((key) => router.ownerOf(key))).size, 3, "keys on every node");
      assert.equal(await redis.mset(...keys.flatMap((key) => [key, `v-${key}`])), "OK");
      assert.deepEqual(await redis.mget("px:a", ...keys, "px:missing"), [
        "42",
        ...keys.map((key) => `v-${key}`),
        null,
      ]);
      assert.equal(await redis.exists("px:a", ...keys, "px:missing"), 41);
      assert.equal(await redis.del("px:a", ...keys), 41);
      assert.equal(await redis.set("px:nx", "1", "NX"), "OK");
      assert.equal(await redis.set("px:nx", "2", "NX"), null);
      await assert.rejects(redis.call("GET", "px:0", "px:1"), /wrong number of arguments for 'get'/);
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      await redis.set(Buffer.from([0xff, 0x00, 0x7b]), bytes);
      assert.deepEqual(
        await redis.getBuffer(Buffer.from([0xff, 0x00, 0x7b])),
        bytes,
        "binary key and value pass unchanged",
      );
      await assert.rejects(redis.call("FLUSHALL"), /does not forward keyless command/);
      await assert.rejects(redis.call("NOSUCH", "x"), /unknown command 'NOSUCH'/);
    } finally {
      redis.disconnect();
    }
  });

  test("commands on one key keep their order through the proxy and its pooled connections", async () => {
    const app = new NodeConnection({ host: "127.0.0.1", port: proxy.port, tagStatus: true });
    try {
      const keys = Array.from({ length: 200 }, (_, i) => `order:${i}`);
      const replies = await Promise.all(
        keys.flatMap((key, i) => [app.send(["SET", key, String(i)]), app.send(["GET", key])]),
      );
      replies.forEach((reply, i) => {
        if (i % 2 === 0) assert.ok(reply instanceof StatusReply && reply.text === "OK");
        else assert.equal(reply, String((i - 1) / 2));
      });
    } finally {
      await app.close();
    }
  });
});
