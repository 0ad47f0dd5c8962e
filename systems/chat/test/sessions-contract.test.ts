/**
 * The session table and the routing bus, one suite each on the in-process twin and on the
 * real Redis (a key prefix of their own): rows per (user, device, connection), expiry
 * honoured by reads whether or not the engine deleted the row (CH-16), exact removal
 * (CH-16), one row per device (CH-25), and "gone" when nobody holds a gateway (CH-17).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { contractSuite } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { RoutedEnvelope, RoutingBus } from "../src/domain/routing.ts";
import type { SessionTable } from "../src/domain/sessions.ts";
import { MemoryRouting } from "../src/store/memory-routing.ts";
import { MemorySessions } from "../src/store/memory-sessions.ts";
import { RedisRouting } from "../src/store/redis-routing.ts";
import { RedisSessions } from "../src/store/redis-sessions.ts";

interface Subject {
  sessions: SessionTable;
  routing: RoutingBus;
  /** A second routing client, as another process would hold. */
  peer: RoutingBus;
}

const T0 = Date.now();

contractSuite<Subject>(
  "sessions and routing",
  [
    {
      name: "in-process",
      open: async () => {
        const routing = new MemoryRouting();
        return { subject: { sessions: new MemorySessions(), routing, peer: routing }, close: async () => {} };
      },
    },
    {
      name: "redis",
      async open(t) {
        const url = await requireRedis(t);
        if (!url) return undefined;
        const prefix = `${uniqueName("chat_t")}:`;
        const clients = await Promise.all(
          Array.from({ length: 4 }, () => connectRedis({ url, commandTimeoutMs: 5_000 })),
        );
        const [a, subA, b, subB] = clients as [
          (typeof clients)[0],
          (typeof clients)[0],
          (typeof clients)[0],
          (typeof clients)[0],
        ];
        return {
          subject: {
            sessions: new RedisSessions(a, prefix, () => T0),
            routing: new RedisRouting(a, subA, prefix),
            peer: new RedisRouting(b, subB, prefix),
          },
          close: async () => {
            const keys = await a.keys(`${prefix}*`);
            if (keys.length > 0) await a.del(...keys);
            await Promise.all(clients.map((c) => closeRedis(c)));
          },
        };
      },
    },
  ],
  (it) => {
    const row = (userId: string, deviceId: string, connectionId: string, expiresAtMs = T0 + 60_000) => ({
      userId,
      deviceId,
      gatewayId: "gw-1",
      connectionId,
      expiresAtMs,
    });

    it("CH-25 one row per device: a user's phone and laptop are both found", async ({ sessions }) => {
      await sessions.put(row("ana", "phone", "c1"));
      await sessions.put(row("ana", "laptop", "c2"));
      const found = await sessions.lookup(["ana"], T0);
      assert.deepEqual(found.map((r) => r.deviceId).sort(), ["laptop", "phone"]);
    });

    it("CH-04 a row reads back whole, whatever its gateway and device ids hold", async ({ sessions }) => {
      const odd = { ...row("dora", "tablet:2", "c-7f3a"), gatewayId: "gw|eu-1:a" };
      await sessions.put(odd);
      assert.deepEqual(await sessions.lookup(["dora"], T0), [odd]);
    });

    it("CH-16 reads ignore a row past its expiry even though it is still stored", async ({ sessions }) => {
      await sessions.put(row("bia", "phone", "c3", T0 + 1_000));
      assert.equal((await sessions.lookup(["bia"], T0 + 999)).length, 1);
      assert.equal((await sessions.lookup(["bia"], T0 + 1_000)).length, 0);
    });

    it("CH-16 removing an old connection never removes the device's newer one", async ({ sessions }) => {
      await sessions.put(row("caio", "phone", "old"));
      await sessions.put(row("caio", "phone", "new"));
      await sessions.remove("caio", "phone", "old");
      assert.deepEqual(
        (await sessions.lookup(["caio"], T0)).map((r) => r.connectionId),
        ["new"],
      );
    });

    it("CH-17 a publish to a gateway nobody holds reports 0 listeners ('gone'); a held one reaches it", async ({
      routing,
      peer,
    }) => {
      const gateway = `gw-${Math.random().toString(36).slice(2)}`;
      assert.equal(await routing.publish(gateway, { connectionIds: ["x"], frame: { action: "message" } }), 0);
      const got: RoutedEnvelope[] = [];
      let arrive = () => {};
      const arrived = new Promise<void>((resolve) => {
        arrive = resolve;
      });
      // Resolves once Redis confirmed the SUBSCRIBE: the publish below finds the subscriber.
      await peer.subscribe(gateway, (envelope) => {
        got.push(envelope);
        arrive();
      });
      assert.equal(
        await routing.publish(gateway, { connectionIds: ["c9"], frame: { action: "message", n: 1 } }),
        1,
      );
      await arrived;
      assert.deepEqual(got, [{ connectionIds: ["c9"], frame: { action: "message", n: 1 } }]);
    });

    it("CH-04 a routing batch's envelopes for one gateway go in one publish and arrive one by one, in order", async ({
      routing,
      peer,
    }) => {
      const gateway = `gw-${Math.random().toString(36).slice(2)}`;
      const got: RoutedEnvelope[] = [];
      let arrive = () => {};
      const arrived = new Promise<void>((resolve) => {
        arrive = resolve;
      });
      await peer.subscribe(gateway, (envelope) => {
        got.push(envelope);
        if (got.length === 3) arrive();
      });
      const envelopes = [1, 2, 3].map((n) => ({ connectionIds: [`c${n}`], frame: { action: "message", n } }));
      assert.equal(
        await routing.publishMany(gateway, envelopes),
        1,
        "one message on the channel, one listener",
      );
      await arrived;
      assert.deepEqual(got, envelopes);
    });
  },
);

test("CH-04 a row an earlier release wrote as JSON is still read (one session TTL after a deploy)", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const redis = await connectRedis({ url, commandTimeoutMs: 5_000 });
  const prefix = `${uniqueName("chat_t")}:`;
  try {
    const old = {
      userId: "eli",
      deviceId: "phone",
      gatewayId: "gw-0",
      connectionId: "c0",
      expiresAtMs: T0 + 60_000,
    };
    await redis.hset(`${prefix}sess:eli`, "phone:c0", JSON.stringify(old));
    assert.deepEqual(await new RedisSessions(redis, prefix, () => T0).lookup(["eli"], T0), [old]);
  } finally {
    await redis.del(`${prefix}sess:eli`);
    await closeRedis(redis);
  }
});
