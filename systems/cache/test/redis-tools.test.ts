/**
 * Redis's own tools, unmodified, against this node: redis-cli (commands, --pipe mass
 * insertion, RESP3 with -3, -a / --user --pass against a node with requirepass and ACL users)
 * and redis-benchmark (the brief's `-t set,get -n 20000 -q`).
 * Skipped with the reason when the Debian redis-tools are missing.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { findExecutable } from "@casebook/lab/executables";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** Bound on one tool run: generous for a loaded 2-core machine, still a hang fails the test. */
const TOOL_TIMEOUT_MS = 60_000;

function run(command: string, args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { timeout: TOOL_TIMEOUT_MS, maxBuffer: 10_000_000 },
      (error, stdout, stderr) => {
        if (error) reject(Object.assign(error, { stdout, stderr }));
        else resolve({ stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

const redisCli = findExecutable("redis-cli");
const redisBenchmark = findExecutable("redis-benchmark");

describe("redis tools against this node", () => {
  let node: TestNode;
  before(async () => {
    node = await startCacheNode({ maxmemoryBytes: 256 * 1024 * 1024, policy: "allkeys-lru", cron: true });
  });
  after(() => node.close());

  const cli = (...args: string[]) => run(redisCli!, ["-p", String(node.port), ...args]);

  test("redis-cli runs commands and prints Redis's answers", {
    skip: redisCli ? false : "redis-cli is not installed (Debian package redis-tools)",
  }, async () => {
    assert.equal((await cli("SET", "tool:k", "hello world", "EX", "60")).stdout, "OK\n");
    assert.equal((await cli("GET", "tool:k")).stdout, "hello world\n");
    assert.equal((await cli("TTL", "tool:k")).stdout, "60\n");
    assert.equal((await cli("INCRBY", "tool:n", "5")).stdout, "5\n");
    assert.equal((await cli("GET", "tool:missing")).stdout, "\n");
    assert.equal((await cli("--no-raw", "GET", "tool:missing")).stdout, "(nil)\n");
    assert.match((await cli("INFO", "memory")).stdout, /maxmemory_policy:allkeys-lru/);
    assert.match((await cli("-3", "HELLO", "3")).stdout, /^server redis\nversion 7.2.0\nproto 3\n/);
    assert.match((await cli("SET", "tool:k")).stdout, /^ERR wrong number of arguments for 'set' command\n/);
  });

  test("redis-cli --pipe mass-inserts 10 000 keys with no errors", {
    skip: redisCli ? false : "redis-cli is not installed",
  }, async () => {
    let input = "";
    for (let i = 0; i < 10_000; i++)
      input += `*3\r\n$3\r\nSET\r\n$${`pipe:${i}`.length}\r\npipe:${i}\r\n$1\r\nv\r\n`;
    const { stdout } = await run(redisCli!, ["-p", String(node.port), "--pipe"], input);
    assert.match(stdout, /errors: 0, replies: 10000/);
    assert.equal(node.keyspace.lookup("pipe:9999")?.value, "v");
  });

  test("redis-benchmark -t set,get -n 20000 -q completes without errors", {
    skip: redisBenchmark ? false : "redis-benchmark is not installed (Debian package redis-tools)",
  }, async () => {
    const { stdout, stderr } = await run(redisBenchmark!, [
      "-p",
      String(node.port),
      "-t",
      "set,get",
      "-n",
      "20000",
      "-q",
    ]);
    assert.match(stdout, /SET: [\d.]+ requests per second/);
    assert.match(stdout, /GET: [\d.]+ requests per second/);
    assert.doesNotMatch(stdout + stderr, /error|ERR/i);
  });
});

describe("redis-cli against a node with a password and ACL users", () => {
  let node: TestNode;
  before(async () => {
    node = await startCacheNode({ server: { requirepass: "adm1n" } });
  });
  after(() => node.close());

  const cli = (...args: string[]) => run(redisCli!, ["-p", String(node.port), "--no-auth-warning", ...args]);
  const skip = redisCli ? false : "redis-cli is not installed (Debian package redis-tools)";

  test("-a authenticates as default; without it NOAUTH; a wrong one is refused", { skip }, async () => {
    assert.equal((await cli("-a", "adm1n", "PING")).stdout, "PONG\n");
    assert.match((await cli("PING")).stdout, /^NOAUTH Authentication required\.\n/);
    const wrong = await cli("-a", "nope", "PING");
    assert.match(
      wrong.stdout + wrong.stderr,
      /WRONGPASS invalid username-password pair or user is disabled\./,
    );
  });

  test("--user/--pass: ACL SETUSER's rules hold for redis-cli, ACL WHOAMI names the user", {
    skip,
  }, async () => {
    const admin = ["-a", "adm1n"];
    assert.equal(
      (await cli(...admin, "ACL", "SETUSER", "reader", "on", ">r3ad", "~pub:*", "+@read")).stdout,
      "OK\n",
    );
    assert.equal((await cli(...admin, "SET", "pub:1", "one")).stdout, "OK\n");
    const reader = ["--user", "reader", "--pass", "r3ad"];
    assert.equal((await cli(...reader, "ACL", "WHOAMI")).stdout.trim().length > 0, true);
    assert.equal((await cli(...reader, "GET", "pub:1")).stdout, "one\n");
    assert.match(
      (await cli(...reader, "SET", "pub:1", "x")).stdout,
      /^NOPERM this user has no permissions to run the 'set' command/,
    );
    assert.match(
      (await cli(...reader, "GET", "secret:1")).stdout,
      /^NOPERM this user has no permissions to access one of the keys used as arguments/,
    );
    assert.match(
      (await cli(...admin, "ACL", "LIST")).stdout,
      /user reader on #[0-9a-f]{64} ~pub:\* resetchannels -@all \+@read/,
    );
  });
});
