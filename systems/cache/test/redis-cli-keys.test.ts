/**
 * CA-18 / CA-19 with the operators' own tool: the real `redis-cli --bigkeys`, `--memkeys`,
 * `--hotkeys` (the node under allkeys-lfu) and `--scan --pattern` against this node, which
 * serves what they send (DBSIZE, SCAN, TYPE, STRLEN, MEMORY USAGE … SAMPLES, CONFIG GET
 * maxmemory-policy, OBJECT FREQ). Asserts on what they print: the biggest key named with its
 * size, the hot key on top with its counter, the matching keys listed. Skipped with the reason
 * when the Debian redis-tools are missing.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { findExecutable } from "@casebook/lab/executables";
import { Redis } from "ioredis";
import { entryBytes } from "../src/domain/cache-entry.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** Bound on one redis-cli run: generous for a loaded 2-core machine, still a hang fails the test. */
const TOOL_TIMEOUT_MS = 60_000;
const BIG_VALUE_BYTES = 200_000;
const HOT_READS = 2_000;

function runCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      redisCli!,
      args,
      { timeout: TOOL_TIMEOUT_MS, maxBuffer: 10_000_000 },
      (error, stdout, stderr) => {
        if (error) reject(Object.assign(error, { stdout, stderr }));
        else resolve(stdout);
      },
    );
  });
}

const redisCli = findExecutable("redis-cli");
const skip = redisCli ? false : "redis-cli is not installed (Debian package redis-tools)";

describe("redis-cli finds big and hot keys on this node", { skip }, () => {
  let node: TestNode;
  let redis: Redis;
  const users = Array.from({ length: 500 }, (_, i) => `user:${i}`);
  const cli = (...args: string[]) => runCli(["-p", String(node.port), ...args]);

  before(async () => {
    // A clock that stands still: LFU counters decay per minute, and a minute boundary between
    // the tool's OBJECT FREQ and the test's must not change the hot key's counter.
    const clock = new ManualClock(Date.now());
    node = await startCacheNode({ maxmemoryBytes: 64 * 1024 * 1024, policy: "allkeys-lfu", clock });
    redis = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect();
    await redis.call("MSET", ...users.flatMap((key, i) => [key, "u".repeat(10 + (i % 90))]));
    for (let i = 0; i < 100; i++) await redis.call("SET", `session:${i}`, "s".repeat(30));
    await redis.call("SET", "blob:big", "b".repeat(BIG_VALUE_BYTES));
    const pipeline = redis.pipeline();
    for (let i = 0; i < HOT_READS; i++) pipeline.get("user:42");
    await pipeline.exec();
  });
  after(async () => {
    redis?.disconnect();
    await node?.close();
  });

  test("CA-19 --bigkeys names the biggest string and counts every key", async () => {
    const out = await cli("--bigkeys");
    assert.match(out, /Biggest string found '"blob:big"' has 200000 bytes/);
    assert.match(out, /Sampled 601 keys in the keyspace!/);
    assert.match(out, /601 strings with \d+ bytes \(100\.00% of keys/);
  });

  test("CA-19 --memkeys ranks by MEMORY USAGE: the accounted bytes of the entry", async () => {
    const out = await cli("--memkeys");
    const bytes = entryBytes("blob:big", "b".repeat(BIG_VALUE_BYTES));
    assert.equal(await redis.call("MEMORY", "USAGE", "blob:big"), bytes);
    assert.match(out, new RegExp(`Biggest string found '"blob:big"' has ${bytes} bytes`));
    assert.match(out, /Sampled 601 keys in the keyspace!/);
  });

  test("CA-18 --hotkeys (allkeys-lfu) puts the key read 2 000 times on top, with its OBJECT FREQ", async () => {
    const out = await cli("--hotkeys");
    const freq = (await redis.call("OBJECT", "FREQ", "user:42")) as number;
    assert.ok(freq > 10, `a hot key's LFU counter (${freq}) is well above a new key's 5`);
    const summary = out.slice(out.indexOf("-------- summary -------"));
    assert.match(summary, /Sampled 601 keys in the keyspace!/);
    assert.match(summary, new RegExp(`\\nhot key found with counter: ${freq}\\tkeyname: "user:42"\\n`));
    const counters = [...summary.matchAll(/hot key found with counter: (\d+)/g)].map((m) => Number(m[1]));
    assert.equal(Math.max(...counters), freq, "no key is hotter");
  });

  test("--scan --pattern 'user:*' lists exactly the user keys", async () => {
    const out = await cli("--scan", "--pattern", "user:*");
    const listed = out.split("\n").filter((line) => line !== "");
    assert.equal(listed.length, users.length, "each key once");
    assert.deepEqual(listed.sort(), [...users].sort());
  });
});
