/**
 * Plain words for an unreachable Redis, on a real client pointed at a closed port (no
 * engine needed: the refusal is the point).
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { closeRedis, connectRedis } from "../../src/redis/connect-redis.ts";
import { plainRedisReason, trackRedisReachability } from "../../src/redis/redis-reachability.ts";

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test("plainRedisReason words socket codes and ioredis's state messages, and keeps a server's first line", () => {
  const coded = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:6379`), { code });
  assert.equal(plainRedisReason(coded("ECONNREFUSED")), "connection refused");
  assert.equal(plainRedisReason(coded("ENOTFOUND")), "host not found");
  assert.equal(
    plainRedisReason(new Error("Stream isn't writeable and enableOfflineQueue options is false")),
    "not connected",
  );
  assert.equal(
    plainRedisReason(new Error("WRONGPASS invalid username-password pair")),
    "authentication failed: check the URL's user and password",
  );
  assert.equal(plainRedisReason(new Error("OOM command not allowed\nmore")), "OOM command not allowed");
});

test("a Redis refusing connections: /readyz's ping says where and why, in plain words", async (t) => {
  const port = await closedPort();
  const redis = await connectRedis({
    url: `redis://127.0.0.1:${port}`,
    lazyConnect: true,
    reconnectMaxDelayMs: 50,
  });
  t.after(() => closeRedis(redis));
  const reach = trackRedisReachability(redis);
  redis.connect().catch(() => {}); // keeps reconnecting in the background, as the limiter's store does
  const expected = `redis at 127.0.0.1:${port} not reachable: connection refused`;
  await eventually(
    async () => {
      await assert.rejects(reach.ping(), (error: Error) => {
        assert.equal(error.message, expected);
        assert.equal((error as Error & { code?: string }).code, "REDIS_UNAVAILABLE");
        return true;
      });
      return true;
    },
    { what: "the ping to fail with the refusal's words" },
  );
  assert.equal(reach.unreachable(), expected);
});
