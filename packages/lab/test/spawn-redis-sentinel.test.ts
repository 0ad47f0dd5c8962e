import assert from "node:assert/strict";
import { test } from "node:test";
import { Redis } from "ioredis";
import { eventually } from "../src/eventually.ts";
import { spawnOrSkip } from "../src/server-engine.ts";
import { spawnRedisSentinel } from "../src/spawn-redis-sentinel.ts";

test("spawnRedisSentinel monitors its own redis-server: names it as master, sees it go down, then stops both", async (t) => {
  const sentinel = await spawnOrSkip(t, () => spawnRedisSentinel({ downAfterMs: 500 }));
  if (!sentinel) return;
  t.after(() => sentinel.stop());
  assert.notEqual(sentinel.port, 26379);
  const client = new Redis(sentinel.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
  });
  t.after(() => client.disconnect());
  await client.connect();
  assert.deepEqual(await client.call("SENTINEL", "get-master-addr-by-name", sentinel.masterName), [
    "127.0.0.1",
    String(sentinel.redis.port),
  ]);
  // Through the sentinel, as an application connects: it resolves the master and talks to it.
  const app = new Redis({
    sentinels: [{ host: "127.0.0.1", port: sentinel.port }],
    name: sentinel.masterName,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
  });
  t.after(() => app.disconnect());
  await app.connect();
  assert.equal(await app.ping(), "PONG");
  app.disconnect();
  await sentinel.redis.kill();
  const flags = await eventually(
    async () => {
      const fields = (await client.call("SENTINEL", "master", sentinel.masterName)) as string[];
      const value = fields[fields.indexOf("flags") + 1] ?? "";
      return value.includes("s_down") ? value : undefined;
    },
    { what: "the sentinel to mark the killed master subjectively down", timeoutMs: 10_000, intervalMs: 100 },
  );
  assert.match(flags, /master/);
  client.disconnect();
  await sentinel.stop();
  assert.equal(sentinel.redis.state, "exited");
});
