import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { engineFree, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import {
  closeRedis,
  connectRedis,
  reconnectDelayMs,
  redactRedisUrl,
  redisClientOptions,
} from "../../src/redis/connect-redis.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { ScriptRegistry } from "../../src/redis/script-registry.ts";
import { cappedCounterScriptsDir } from "./fixtures/capped-counter-store.ts";
import { spawnRedis } from "./fixtures/spawn-redis.ts";

/** A port with nothing listening: bind port 0, note it, close. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function onceEvent(
  emitter: { once(event: string, listener: () => void): unknown },
  event: string,
): Promise<void> {
  return new Promise((resolve) => emitter.once(event, () => resolve()));
}

test("the client options are explicit and fail fast by default", (t) => {
  if (engineFree(t)) return;
  const options = redisClientOptions({ keyPrefix: "p:", random: () => 0 });
  assert.equal(options.enableOfflineQueue, false);
  assert.equal(options.maxRetriesPerRequest, 0);
  assert.equal(options.autoResendUnfulfilledCommands, false);
  assert.equal(options.commandTimeout, 250);
  // 0 turns ioredis's own timer off (ioredis would arm one for 0 ms): the caller bounds its calls.
  assert.equal(redisClientOptions({ commandTimeoutMs: 0 }).commandTimeout, undefined);
  assert.equal(options.connectTimeout, 1_000);
  assert.equal(options.keyPrefix, "p:");
  assert.equal(options.lazyConnect, true);
  const retry = options.retryStrategy!;
  assert.equal(retry(1), 25);
  assert.equal(retry(300), 1_000, "delays are capped at reconnectMaxDelayMs (half fixed with random 0)");
  assert.equal(retry(301), null, "and attempts at maxReconnectAttempts");
});

test("reconnect delays grow exponentially to the cap, jittered within [ceiling/2, ceiling]", (t) => {
  if (engineFree(t)) return;
  assert.deepEqual(
    [1, 2, 3, 10].map((attempt) => reconnectDelayMs(attempt, 50, 2_000, () => 0.999_999)),
    [49, 99, 199, 1_999],
  );
  assert.equal(
    reconnectDelayMs(1_000, 50, 2_000, () => 0),
    1_000,
  );
});

test("URLs are validated and passwords never appear in messages", async () => {
  assert.equal(redactRedisUrl("redis://user:secret@127.0.0.1:6379/2"), "redis://user:***@127.0.0.1:6379/2");
  assert.throws(
    () => redactRedisUrl("http://127.0.0.1"),
    (e) => redisErrors.is(e, "REDIS_URL_INVALID"),
  );
  assert.throws(
    () => redactRedisUrl("not a url"),
    (e) => redisErrors.is(e, "REDIS_URL_INVALID"),
  );
  await assert.rejects(connectRedis({ url: "" }), /Set REDIS_URL/);
});

test("connecting to a down Redis fails with REDIS_UNAVAILABLE and leaves no retry loop", async (t) => {
  if (engineFree(t)) return;
  const port = await closedPort();
  await assert.rejects(
    connectRedis({ url: `redis://:pw@127.0.0.1:${port}`, connectTimeoutMs: 500 }),
    (error) => {
      assert.ok(redisErrors.is(error, "REDIS_UNAVAILABLE"));
      assert.equal(error.fields.phase, "connect");
      assert.ok(!error.message.includes(":pw@"), "password redacted");
      return true;
    },
  );
  // If a reconnect timer survived, this test file would never exit.
});

test("a Sentinel-managed master: no sentinel or no name is REDIS_URL_INVALID; unreachable sentinels are REDIS_UNAVAILABLE within the bound", async (t) => {
  await assert.rejects(connectRedis({ sentinel: { nodes: [], masterName: "m" } }), (error) =>
    redisErrors.is(error, "REDIS_URL_INVALID"),
  );
  if (engineFree(t)) return;
  const port = await closedPort();
  const started = performance.now();
  await assert.rejects(
    connectRedis({
      sentinel: { nodes: [{ host: "127.0.0.1", port }], masterName: "m" },
      connectTimeoutMs: 500,
    }),
    (error) => {
      assert.ok(redisErrors.is(error, "REDIS_UNAVAILABLE"));
      assert.match(String(error.fields.url), /master m via 127\.0\.0\.1:/);
      return true;
    },
  );
  assert.ok(performance.now() - started < 3_000);
  // A failover itself: systems/feed/test/redis-failover.test.ts (a real sentinel and replica).
});

test("keyPrefix applies to script KEYS", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const prefix = `${uniqueName("infra_redis_prefix")}:`;
  const prefixed = await connectRedis({ url, keyPrefix: prefix });
  const plain = await connectRedis({ url });
  try {
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
    await registry.run(prefixed, "incr-capped", ["counter"], [3, 60_000]);
    assert.equal(await plain.exists(`${prefix}counter`), 1);
    assert.equal(await plain.exists("counter"), 0);
  } finally {
    await plain.del(`${prefix}counter`);
    await Promise.all([closeRedis(prefixed), closeRedis(plain)]);
  }
});

test("lazyConnect resolves at once; a command before connect() fails fast and starts connecting", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const redis = await connectRedis({ url, lazyConnect: true });
  const explicit = await connectRedis({ url, lazyConnect: true });
  try {
    assert.equal(redis.status, "wait");
    const ready = onceEvent(redis, "ready");
    await assert.rejects(redis.ping(), /enableOfflineQueue/);
    await ready;
    assert.equal(await redis.ping(), "PONG");
    await explicit.connect();
    assert.equal(await explicit.ping(), "PONG");
  } finally {
    await Promise.all([closeRedis(redis), closeRedis(explicit)]);
  }
});

test("when Redis dies, calls fail at once with REDIS_UNAVAILABLE instead of waiting", {
  timeout: 20_000,
}, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t);
  if (!server) return;
  // A huge command timeout: if the call queued instead of failing, this test would time out.
  const redis = await connectRedis({ url: server.url, commandTimeoutMs: 60_000 });
  const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
  try {
    await registry.run(redis, "incr-capped", ["k"], [3, 60_000]);
    const closed = onceEvent(redis, "close");
    await server.stop();
    await closed;
    await assert.rejects(registry.run(redis, "incr-capped", ["k"], [3, 60_000]), (error) => {
      assert.ok(redisErrors.is(error, "REDIS_UNAVAILABLE"), String(error));
      return true;
    });
  } finally {
    await closeRedis(redis);
    await server.stop();
  }
});

test("a hung Redis costs one commandTimeoutMs and says the outcome is unknown", {
  timeout: 20_000,
}, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t);
  if (!server) return;
  const redis = await connectRedis({ url: server.url, commandTimeoutMs: 100 });
  const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
  try {
    await registry.loadAll(redis);
    server.pause();
    await assert.rejects(registry.run(redis, "incr-capped", ["k"], [3, 60_000]), (error) =>
      redisErrors.is(error, "REDIS_TIMEOUT"),
    );
  } finally {
    server.resume();
    await closeRedis(redis);
    await server.stop();
  }
});

test("a command in flight when the connection drops is rejected, never re-sent", {
  timeout: 20_000,
}, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t);
  if (!server) return;
  const client = await connectRedis({ url: server.url, commandTimeoutMs: 10_000 });
  const admin = await connectRedis({ url: server.url });
  try {
    const clientId = await client.client("ID");
    // BLPOP stays in flight until a push or a disconnect: a deterministic in-flight command.
    const inFlight = client.blpop("queue", 0);
    await waitFor(async () => String(await admin.client("LIST")).includes("cmd=blpop"));
    const ready = onceEvent(client, "ready");
    // Expect the rejection before causing it: it can arrive before KILL's own reply does.
    const rejected = assert.rejects(inFlight);
    await admin.client("KILL", "ID", String(clientId));
    await rejected;
    await ready; // reconnected: a re-sent BLPOP would be waiting on the server now
    assert.equal(await client.ping(), "PONG", "no BLPOP blocks the new connection");
    await admin.lpush("queue", "job");
    assert.equal(await admin.llen("queue"), 1, "nobody popped the job");
  } finally {
    await Promise.all([closeRedis(client), closeRedis(admin)]);
    await server.stop();
  }
});

test("closeRedis quits gracefully, is bounded on a stalled server, and is idempotent", {
  timeout: 20_000,
}, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t);
  if (!server) return;
  try {
    const healthy = await connectRedis({ url: server.url });
    await closeRedis(healthy);
    assert.equal(healthy.status, "end");
    await closeRedis(healthy);

    const stalled = await connectRedis({ url: server.url, commandTimeoutMs: 5_000 });
    server.pause();
    await closeRedis(stalled, { quitTimeoutMs: 100 });
    assert.equal(stalled.status, "end");
  } finally {
    server.resume();
    await server.stop();
  }
});

/** Bounded poll of an external process's state. */
async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  await eventually(condition, { timeoutMs, intervalMs: 10 });
}
