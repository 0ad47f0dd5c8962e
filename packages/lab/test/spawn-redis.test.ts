import assert from "node:assert/strict";
import { existsSync, readlinkSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { freePort } from "../src/free-port.ts";
import { type SpawnedRedis, spawnRedis } from "../src/spawn-redis.ts";
import { engineFree, tcpReachable } from "../src/test-engines.ts";
import { connectErrorCode, eventually, runThenDie } from "./process-helpers.ts";

const spawnRedisPath = fileURLToPath(new URL("../src/spawn-redis.ts", import.meta.url));

/** A client that fails fast instead of reconnecting or queueing: the test decides what happens next. */
function client(url: string): Redis {
  return new Redis(url, {
    commandTimeout: 300,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    lazyConnect: true,
  });
}

describe("spawnRedis", () => {
  let redis: SpawnedRedis;
  before(async () => {
    redis = await spawnRedis();
  });
  after(async () => {
    await redis.stop();
  });

  test("answers PING on its own port, with no persistence configured", async (t) => {
    if (engineFree(t)) return;
    assert.match(redis.url, /^redis:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(redis.port, 6379);
    const c = client(redis.url);
    await c.connect();
    try {
      assert.equal(await c.ping(), "PONG");
      assert.deepEqual(await c.config("GET", "save"), ["save", ""]);
      assert.deepEqual(await c.config("GET", "appendonly"), ["appendonly", "no"]);
    } finally {
      c.disconnect();
    }
  });

  test("pause makes a command time out; resume answers again on the same connection", async (t) => {
    if (engineFree(t)) return;
    const c = client(redis.url);
    await c.connect();
    try {
      redis.pause();
      assert.equal(redis.state, "paused");
      await assert.rejects(c.ping(), /timed out/i);
      redis.resume();
      assert.equal(redis.state, "running");
      assert.equal(await c.ping(), "PONG");
    } finally {
      c.disconnect();
    }
  });

  test("kill refuses connections; restart serves again on the same port, empty", async (t) => {
    if (engineFree(t)) return;
    const c = client(redis.url);
    await c.connect();
    await c.set("k", "v");
    c.disconnect();
    const pid = redis.pid;
    await redis.kill();
    assert.equal(redis.state, "exited");
    assert.equal(await tcpReachable("127.0.0.1", redis.port), false);
    assert.equal(await connectErrorCode(redis.port), "ECONNREFUSED");
    await redis.restart();
    assert.notEqual(redis.pid, pid);
    const again = client(redis.url);
    await again.connect();
    try {
      assert.equal(await again.get("k"), null);
    } finally {
      again.disconnect();
    }
  });

  test("pause on a killed engine is a typed error, not a silent no-op", async (t) => {
    if (engineFree(t)) return;
    const other = await spawnRedis();
    t.after(() => other.stop());
    await other.kill();
    assert.throws(() => other.pause(), { code: "LAB_ENGINE_NOT_RUNNING" });
  });
});

test("a lost port race is detected: the port answering for another redis-server is not taken as ready", async (t) => {
  if (engineFree(t)) return;
  const winner = await spawnRedis();
  const ports = [winner.port];
  const loser = await spawnRedis({ pickPort: async () => ports.shift() ?? (await freePort()) });
  try {
    assert.notEqual(loser.port, winner.port, "the loser moved to a fresh port");
    const c = client(loser.url);
    await c.connect();
    try {
      const info = await c.info("server");
      assert.match(
        info,
        new RegExp(`\\r\\nprocess_id:${loser.pid}\\r\\n`),
        "its url reaches its own process",
      );
    } finally {
      c.disconnect();
    }
  } finally {
    await loser.stop();
    await winner.stop();
  }
});

test("stop is final: the port is refused, the temp dir is gone, restart fails", async (t) => {
  if (engineFree(t)) return;
  const redis = await spawnRedis();
  const dir = readlinkSync(`/proc/${redis.pid}/cwd`);
  assert.equal(existsSync(dir), true);
  await redis.stop();
  await redis.stop(); // idempotent
  assert.equal(await tcpReachable("127.0.0.1", redis.port), false);
  assert.equal(existsSync(dir), false);
  await assert.rejects(redis.restart(), { code: "LAB_ENGINE_NOT_RUNNING" });
});

async function orphanedRedis(how: "SIGKILL" | "exit"): Promise<{ port: number; dir: string }> {
  const body = `
    import { readlinkSync } from "node:fs";
    import { spawnRedis } from ${JSON.stringify(spawnRedisPath)};
    const redis = await spawnRedis();
    console.log(JSON.stringify({ port: redis.port, dir: readlinkSync("/proc/" + redis.pid + "/cwd") }));
  `;
  return runThenDie(body, how);
}

test("the engine dies with the test process, even when that is SIGKILLed", async (t) => {
  if (engineFree(t)) return;
  const { port, dir } = await orphanedRedis("SIGKILL");
  await eventually(async () => (await connectErrorCode(port)) === "ECONNREFUSED");
  await eventually(() => !existsSync(dir));
});

test("the engine dies with the test process on a plain exit", async (t) => {
  if (engineFree(t)) return;
  const { port, dir } = await orphanedRedis("exit");
  await eventually(async () => (await connectErrorCode(port)) === "ECONNREFUSED");
  await eventually(() => !existsSync(dir));
});
