import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { engineFree } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";
import { closeRedis, connectRedis } from "../../src/redis/connect-redis.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { parseScript } from "../../src/redis/script-contract.ts";
import { ScriptRegistry, toRedisError } from "../../src/redis/script-registry.ts";
import { cappedCounterScriptsDir } from "./fixtures/capped-counter-store.ts";
import { spawnRedis } from "./fixtures/spawn-redis.ts";

const echo = `-- echo: returns its key and argument.
-- KEYS[1] any key
-- ARGV[1] any value
-- returns {key, value}
return {KEYS[1], ARGV[1]}
`;

async function withScriptDir(
  files: Record<string, string>,
  body: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-scripts-"));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Calls per command name from the server's INFO commandstats. */
async function commandCalls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info("commandstats");
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return match ? Number(match[1]) : 0;
}

test("fromDir loads every .lua file, ignores other files, and lists names", async (t) => {
  if (engineFree(t)) return;
  const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
  assert.deepEqual(registry.names(), ["incr-capped"]);
  assert.equal(registry.get("incr-capped").numKeys, 1);
  assert.throws(
    () => registry.get("nope"),
    (e) => redisErrors.is(e, "REDIS_SCRIPT_UNKNOWN") && /incr-capped/.test(e.message),
  );
});

test("fromDir fails at load on an invalid script or a duplicate name, naming the file", async (t) => {
  if (engineFree(t)) return;
  await withScriptDir({ "echo-1.lua": echo, "broken-2.lua": echo, "notes.txt": "x" }, async (dir) => {
    await assert.rejects(
      ScriptRegistry.fromDir(dir),
      /broken-2\.lua: the header lists 1 KEYS line\(s\) but the file name says 2/,
    );
  });
  assert.throws(
    () => new ScriptRegistry([parseScript("echo-1.lua", echo), parseScript("echo-1.lua", echo)]),
    /both define script "echo"/,
  );
});

test("EVALSHA when cached, EVAL on NOSCRIPT, again after SCRIPT FLUSH", { timeout: 20_000 }, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t); // SCRIPT FLUSH only ever on a private server
  if (!server) return;
  const redis = await connectRedis({ url: server.url, commandTimeoutMs: 5_000 });
  const registry = new ScriptRegistry([parseScript("echo-1.lua", echo)]);
  try {
    assert.deepEqual(await registry.run(redis, "echo", ["k"], [1]), ["k", "1"]);
    assert.equal(await commandCalls(redis, "eval"), 1, "first call: NOSCRIPT, then EVAL");
    assert.deepEqual(await registry.run(redis, "echo", ["k"], ["two"]), ["k", "two"]);
    assert.equal(await commandCalls(redis, "eval"), 1, "second call: EVALSHA hit, no EVAL");
    await redis.script("FLUSH");
    assert.deepEqual(await registry.run(redis, "echo", ["k"], [3]), ["k", "3"]);
    assert.equal(await commandCalls(redis, "eval"), 2, "after the flush: EVAL once more");
    assert.ok((await commandCalls(redis, "evalsha")) >= 3);
  } finally {
    await closeRedis(redis);
    await server.stop();
  }
});

test("a pipelined batch survives NOSCRIPT and keeps results in call order", {
  timeout: 20_000,
}, async (t) => {
  if (engineFree(t)) return;
  const server = await spawnRedis(t);
  if (!server) return;
  const redis = await connectRedis({ url: server.url, commandTimeoutMs: 5_000 });
  const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir, { maxBatch: 10 });
  try {
    await registry.loadAll(redis);
    await redis.script("FLUSH");
    const calls = [
      { name: "incr-capped", keys: ["a"], args: [2, 60_000] },
      { name: "incr-capped", keys: ["a"], args: [2, 60_000] },
      { name: "incr-capped", keys: ["a"], args: [0, 60_000] },
      { name: "incr-capped", keys: ["b"], args: [2, 60_000] },
    ];
    const results = await registry.runBatch(redis, calls);
    assert.deepEqual(
      results.map((r) =>
        r.status === "fulfilled" ? (r.value as number[]).slice(0, 2) : (r.reason as Error).message,
      ),
      [[1, 1], [1, 2], "incr-capped: ARG_INVALID cap must be an integer >= 1", [1, 1]],
    );
    assert.equal(await commandCalls(redis, "eval"), 4, "each NOSCRIPT call re-sent once as EVAL");
    const again = await registry.runBatch(redis, calls.slice(0, 1));
    assert.deepEqual(again[0], {
      status: "fulfilled",
      value: [0, 2, (again[0] as { value: number[] }).value[2]],
    });
    assert.equal(await commandCalls(redis, "eval"), 4, "cached now: EVALSHA only");
    assert.throws(
      () => registry.checkBatch(11),
      (e) => redisErrors.is(e, "REDIS_BATCH_TOO_LARGE"),
    );
    await assert.rejects(
      registry.runBatch(
        redis,
        Array.from({ length: 11 }, () => calls[0]!),
      ),
      /maxBatch 10/,
    );
  } finally {
    await closeRedis(redis);
    await server.stop();
  }
});

test("clusterSlots refuses keys of different slots, counting the connection's keyPrefix", (t) => {
  if (engineFree(t)) return;
  const script = parseScript(
    "pair-2.lua",
    "-- KEYS[1] first\n-- KEYS[2] second\n-- returns 1\nreturn redis.call('GET', KEYS[1])",
  );
  const registry = new ScriptRegistry([script], { clusterSlots: true });
  registry.checkSlots("pair", ["{t1}:a", "{t1}:b"], "svc:");
  assert.throws(
    () => registry.checkSlots("pair", ["a", "b"], ""),
    (e) => redisErrors.is(e, "REDIS_SCRIPT_CROSS_SLOT"),
  );
  // A prefix carrying the tag puts every key in one slot.
  registry.checkSlots("pair", ["a", "b"], "{svc}:");
  new ScriptRegistry([script]).checkSlots("pair", ["a", "b"]); // off by default
});

test("failures map to codes that tell whether the script ran", (t) => {
  if (engineFree(t)) return;
  const reply = (message: string) => Object.assign(new Error(message), { name: "ReplyError" });
  assert.equal(toRedisError("s", reply("SOLD_OUT none left")).code, "REDIS_SCRIPT_FAILED");
  assert.equal(toRedisError("s", reply("SOLD_OUT none left")).fields.replyCode, "SOLD_OUT");
  assert.equal(toRedisError("s", reply("BUSY Redis is busy running a script")).code, "REDIS_UNAVAILABLE");
  assert.equal(toRedisError("s", reply("LOADING Redis is loading the dataset")).code, "REDIS_UNAVAILABLE");
  assert.equal(toRedisError("s", new Error("Command timed out")).code, "REDIS_TIMEOUT");
  assert.equal(toRedisError("s", new Error("Connection is closed.")).code, "REDIS_UNAVAILABLE");
});
