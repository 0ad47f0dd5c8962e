import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { InProcessKeyspace } from "../../src/redis/in-process-keyspace.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { parseScript } from "../../src/redis/script-contract.ts";
import { ScriptRegistry } from "../../src/redis/script-registry.ts";
import { InProcessScriptRunner, type ScriptTwin } from "../../src/redis/script-runner.ts";

const setScript = parseScript(
  "put-1.lua",
  "-- put: sets a key.\n-- KEYS[1] key\n-- ARGV[1] value\n-- returns OK\nreturn redis.call('SET', KEYS[1], ARGV[1])",
);
const put: ScriptTwin = (keyspace, keys, argv) => {
  keyspace.set(keys[0]!, argv[0]!);
  return { ok: "OK" };
};

function runner(twins: Record<string, ScriptTwin>, maxKeys = 100) {
  const keyspace = new InProcessKeyspace({ clock: new ManualClock(0), maxKeys });
  const registry = new ScriptRegistry([setScript], { maxBatch: 3 });
  return { keyspace, runner: new InProcessScriptRunner({ registry, twins, keyspace }) };
}

test("the twin rule: a script without a twin, or a twin without a script, fails at construction", () => {
  assert.throws(
    () => runner({}),
    (e) => redisErrors.is(e, "REDIS_SCRIPT_UNKNOWN") && /without a twin \[put\]/.test(e.message),
  );
  assert.throws(() => runner({ put, extra: put }), /twins without a script \[extra\]/);
});

test("a twin sees ARGV as strings, exactly as Lua does", async () => {
  const seen: string[][] = [];
  const { runner: r } = runner({
    put: (keyspace, keys, argv) => {
      seen.push([...argv]);
      return put(keyspace, keys, argv);
    },
  });
  assert.equal(await r.run("put", ["k"], [1.5]), "OK");
  assert.deepEqual(seen, [["1.5"]]);
});

test("an asynchronous twin is refused: only a synchronous twin is atomic", async () => {
  const { runner: r } = runner({ put: (async () => "late") as unknown as ScriptTwin });
  await assert.rejects(
    r.run("put", ["k"], ["v"]),
    (e) => redisErrors.is(e, "REDIS_SCRIPT_FAILED") && /synchronous/.test(e.message),
  );
});

test("a full keyspace surfaces as REDIS_KEYSPACE_FULL, not as a script failure", async () => {
  const { runner: r } = runner({ put }, 1);
  await r.run("put", ["a"], ["1"]);
  await r.run("put", ["a"], ["2"]);
  await assert.rejects(r.run("put", ["b"], ["1"]), (e) => redisErrors.is(e, "REDIS_KEYSPACE_FULL"));
});

test("runBatch refuses a malformed call before running any, and bounds the batch", async () => {
  const { keyspace, runner: r } = runner({ put });
  await assert.rejects(
    r.runBatch([
      { name: "put", keys: ["a"], args: ["1"] },
      { name: "put", keys: ["b"], args: [] },
    ]),
    (e) => redisErrors.is(e, "REDIS_SCRIPT_ARITY"),
  );
  assert.equal(keyspace.exists("a"), false);
  await assert.rejects(
    r.runBatch(Array.from({ length: 4 }, () => ({ name: "put", keys: ["a"], args: ["1"] }))),
    (e) => redisErrors.is(e, "REDIS_BATCH_TOO_LARGE"),
  );
});

test("runBatch settles each call on its own", async () => {
  const { keyspace, runner: r } = runner({ put });
  keyspace.hset("h", { f: 1 });
  const results = await r.runBatch([
    { name: "put", keys: ["a"], args: ["1"] },
    { name: "put", keys: ["h"], args: ["1"] },
  ]);
  assert.deepEqual(results[0], { status: "fulfilled", value: "OK" });
  assert.equal(results[1]!.status, "fulfilled", "SET replaces any type, as in Redis");
});
