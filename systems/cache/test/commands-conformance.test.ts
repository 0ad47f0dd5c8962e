/**
 * Differential conformance: the same ioredis calls against this node and against a
 * real `redis-server` (spawned on a free port), in RESP2 and in RESP3 (ioredis 6's
 * default), and every reply — value or error text — must be identical. Where this
 * node differs on purpose (one database, no persistence), the case is listed in
 * `test/commands-own.test.ts` instead, with the reason. One allowance, for the clock
 * rather than the code: a TTL after an absolute expiry may round to the neighbouring
 * second (see `roundedTtl`); that expiry itself is compared exactly, with PEXPIRETIME.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { findExecutable } from "@casebook/lab/executables";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { Redis } from "ioredis";
import { startCacheNode, type TestNode } from "./cache-node.ts";

type Arg = string | Buffer;
type Outcome = { value: unknown } | { error: string };

async function outcome(client: Redis, args: readonly Arg[], binary: boolean): Promise<Outcome> {
  try {
    const [name, ...rest] = args;
    const value = binary
      ? await client.callBuffer(String(name), rest as (string | Buffer)[])
      : await client.call(String(name), rest as (string | Buffer)[]);
    return { value };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** CONFIG GET's pairs come in hash-table order in Redis: compare them as a set of pairs. */
function normalize(args: readonly Arg[], result: Outcome): Outcome {
  const isConfigGet = String(args[0]).toLowerCase() === "config" && String(args[1]).toLowerCase() === "get";
  if (!isConfigGet || !("value" in result) || !Array.isArray(result.value)) return result;
  const flat = result.value as string[];
  const pairs: string[] = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push(`${flat[i]}=${flat[i + 1]}`);
  return { value: pairs.sort() };
}

const at = (offsetS: number) => String(Math.floor(Date.now() / 1000) + offsetS);
const atMs = (offsetMs: number) => String(Date.now() + offsetMs);

/**
 * TTL steps after an absolute expiry (EXAT, PXAT, EXPIREAT, PEXPIREAT, GETEX EXAT). The expiry
 * itself is exact, and the PEXPIRETIME step before each of these compares it to the
 * millisecond. TTL is not: both servers answer floor((left + 500) / 1000) on their own clock
 * at their own moment, and an absolute deadline puts the half-second boundary anywhere, so
 * the two moments can straddle it (99 on one, 100 on the other). Such a step's replies may
 * differ by exactly 1 when both are non-negative; -1 and -2 must still match exactly.
 */
const roundedTtlSteps = new WeakSet<readonly Arg[]>();
function roundedTtl(key: string): Arg[] {
  const step = ["TTL", key];
  roundedTtlSteps.add(step);
  return step;
}

/** Both replies are TTLs of a `roundedTtl` step, non-negative and at most 1 apart. */
function withinRounding(args: readonly Arg[], mine: Outcome, peers: Outcome): boolean {
  if (!roundedTtlSteps.has(args) || !("value" in mine) || !("value" in peers)) return false;
  const [a, b] = [mine.value, peers.value];
  if (typeof a !== "number" || typeof b !== "number") return false;
  return Number.isInteger(a) && Number.isInteger(b) && a >= 0 && b >= 0 && Math.abs(a - b) <= 1;
}

/** Command groups, run in order on a flushed keyspace; each step's replies must match. */
const groups: Record<string, () => Arg[][]> = {
  "GET, SET and its options": () => [
    ["SET", "k", "v"],
    ["GET", "k"],
    ["GET", "missing"],
    ["SET", "k", "v2", "NX"],
    ["SET", "k", "v2", "XX"],
    ["SET", "k", "v3", "XX", "GET"],
    ["SET", "new", "v", "NX", "GET"],
    ["SET", "new", "v9", "NX", "GET"],
    ["SET", "absent", "v", "XX", "GET"],
    ["SET", "k", "v", "EX", "0"],
    ["SET", "k", "v", "EX", "-1"],
    ["SET", "k", "v", "PX", "0"],
    ["SET", "k", "v", "EX", "abc"],
    ["SET", "k", "v", "EX", "1.5"],
    ["SET", "k", "v", "NX", "XX"],
    ["SET", "k", "v", "EX", "10", "PX", "10"],
    ["SET", "k", "v", "KEEPTTL", "EX", "10"],
    ["SET", "k", "v", "EX", "10", "KEEPTTL"],
    ["SET", "k", "v", "EX"],
    ["SET", "k", "v", "FOO"],
    ["SET", "k", "v", "EX", "9223372036854775807"],
    ["SET", "k", "v", "PX", "9223372036854775807"],
    ["SET", "k", "v", "EX", "100", "EX", "200"],
    ["TTL", "k"],
    ["SET", "k", "v2", "KEEPTTL"],
    ["TTL", "k"],
    ["SET", "k", "v3"],
    ["TTL", "k"],
    ["SET", "past", "v", "PXAT", "1"],
    ["GET", "past"],
    ["SET", "future", "v", "EXAT", at(100)],
    ["PEXPIRETIME", "future"],
    roundedTtl("future"),
    ["SET", "future", "v", "PXAT", atMs(50_000)],
    ["PEXPIRETIME", "future"],
    roundedTtl("future"),
    ["SET", "k"],
    ["GET"],
    ["GET", "a", "b"],
    ["set", "lower", "case"],
    ["gEt", "lower"],
  ],
  "GETDEL, MGET, MSET": () => [
    ["SET", "k", "v"],
    ["GETDEL", "k"],
    ["GETDEL", "k"],
    ["GETDEL"],
    ["MSET", "a", "1", "b", "2", "a", "3"],
    ["MGET", "a", "b", "missing", "a"],
    ["MSET", "a"],
    ["MSET", "a", "1", "b"],
    ["MGET"],
  ],
  "INCR, INCRBY, DECR, DECRBY": () => [
    ["INCR", "n"],
    ["INCRBY", "n", "10"],
    ["DECR", "n"],
    ["DECRBY", "n", "5"],
    ["INCRBY", "n", "-100"],
    ["INCRBY", "n", "abc"],
    ["INCRBY", "n", "1.5"],
    ["INCRBY", "n", "+1"],
    ["INCRBY", "n", "01"],
    ["SET", "s", "v"],
    ["INCR", "s"],
    ["SET", "s", " 1"],
    ["INCR", "s"],
    ["SET", "s", "010"],
    ["INCR", "s"],
    ["SET", "s", "-0"],
    ["INCR", "s"],
    ["SET", "big", "9223372036854775806"],
    ["INCR", "big"],
    ["INCR", "big"],
    ["GET", "big"],
    ["SET", "small", "-9223372036854775807"],
    ["DECR", "small"],
    ["DECR", "small"],
    ["INCRBY", "n", "9223372036854775807"],
    ["DECRBY", "n", "-9223372036854775808"],
    ["INCRBY", "x", "9007199254740993"],
    ["INCRBY", "x", "9007199254740993"],
    ["SET", "t", "1", "EX", "100"],
    ["INCR", "t"],
    ["TTL", "t"],
    ["INCR"],
    ["INCRBY", "n"],
  ],
  "DEL, EXISTS, UNLINK, TYPE, DBSIZE, FLUSHALL": () => [
    ["MSET", "a", "1", "b", "2", "c", "3"],
    ["DBSIZE"],
    ["EXISTS", "a", "a", "missing"],
    ["DEL", "a", "missing", "a"],
    ["UNLINK", "b"],
    ["TYPE", "c"],
    ["TYPE", "a"],
    ["DBSIZE"],
    ["FLUSHALL", "foo"],
    ["FLUSHALL", "ASYNC", "SYNC"],
    ["FLUSHDB", "sync"],
    ["DBSIZE"],
    ["DEL"],
    ["EXISTS"],
    ["DBSIZE", "x"],
  ],
  "EXPIRE family, TTL, PERSIST": () => [
    ["SET", "k", "v"],
    ["TTL", "k"],
    ["TTL", "missing"],
    ["EXPIRE", "missing", "10"],
    ["EXPIRE", "k", "abc"],
    ["EXPIRE", "k", "10", "foo"],
    ["EXPIRE", "k", "10", "NX", "XX"],
    ["EXPIRE", "k", "10", "GT", "LT"],
    ["EXPIRE", "k", "10", "GT"],
    ["EXPIRE", "k", "10", "XX"],
    ["EXPIRE", "k", "100", "NX"],
    ["TTL", "k"],
    ["EXPIRE", "k", "200", "NX"],
    ["EXPIRE", "k", "200", "XX"],
    ["EXPIRE", "k", "50", "GT"],
    ["EXPIRE", "k", "50", "LT"],
    ["TTL", "k"],
    ["PERSIST", "k"],
    ["PERSIST", "k"],
    ["PERSIST", "missing"],
    ["TTL", "k"],
    ["EXPIRE", "k", "10", "LT"],
    ["TTL", "k"],
    ["PEXPIRE", "k", "100000"],
    ["TTL", "k"],
    ["EXPIREAT", "k", at(300)],
    ["PEXPIRETIME", "k"],
    roundedTtl("k"),
    ["PEXPIREAT", "k", atMs(400_000)],
    ["PEXPIRETIME", "k"],
    roundedTtl("k"),
    ["EXPIRE", "k", "9223372036854775807"],
    ["PEXPIRE", "k", "9223372036854775807"],
    ["EXPIRE", "k", "-9223372036854775808"],
    ["EXPIRE", "k", "0"],
    ["EXISTS", "k"],
    ["SET", "k", "v"],
    ["EXPIRE", "k", "-10"],
    ["GET", "k"],
    ["SET", "k", "v"],
    ["EXPIREAT", "k", "1"],
    ["GET", "k"],
    ["EXPIRE", "k"],
    ["TTL"],
  ],
  "connection: PING, ECHO, SELECT, CLIENT, HELLO errors, unknown commands": () => [
    ["PING"],
    ["PING", "hello"],
    ["PING", "a", "b"],
    ["ECHO", "x y"],
    ["ECHO"],
    ["SELECT", "0"],
    ["SELECT", "abc"],
    ["SELECT", "99999999999"],
    ["CLIENT", "SETNAME", "conformance"],
    ["CLIENT", "GETNAME"],
    ["CLIENT", "SETNAME", "a b"],
    ["CLIENT", "SETNAME", "a\nb"],
    ["CLIENT", "FOO"],
    ["CLIENT"],
    ["CLIENT", "GETNAME", "x"],
    ["HELLO", "4"],
    ["HELLO", "1"],
    ["HELLO", "abc"],
    ["HELLO", "3", "FOO"],
    ["HELLO", "3", "SETNAME", "a b"],
    ["FOO", "bar", "baz"],
    ["FOO"],
    ["FOO", "x".repeat(200), "y"],
  ],
  "CONFIG and COMMAND": () => [
    ["CONFIG", "GET", "maxmemory"],
    ["CONFIG", "GET", "maxmemory-policy"],
    ["CONFIG", "GET", "maxmemory-samples"],
    ["CONFIG", "GET", "save"],
    ["CONFIG", "GET", "appendonly"],
    ["CONFIG", "GET", "lfu-*"],
    ["CONFIG", "GET", "no-such-thing"],
    ["CONFIG", "SET", "maxmemory-policy", "bad"],
    ["CONFIG", "SET", "no-such-thing", "1"],
    ["CONFIG", "SET", "maxmemory", "abc"],
    ["CONFIG", "SET", "maxmemory", "10mb", "maxmemory-policy", "bad"],
    ["CONFIG", "GET", "maxmemory"],
    ["CONFIG", "SET", "maxmemory", "10mb", "maxmemory-policy", "allkeys-lru"],
    ["CONFIG", "GET", "maxmemory"],
    ["CONFIG", "GET", "maxmemory-policy"],
    ["CONFIG", "SET", "maxmemory", "1gb"],
    ["CONFIG", "GET", "maxmemory"],
    ["CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction"],
    ["CONFIG", "SET", "maxmemory"],
    ["CONFIG", "GET"],
    ["CONFIG", "FOO"],
    ["CONFIG", "RESETSTAT"],
    ["COMMAND", "INFO", "get"],
    ["COMMAND", "INFO", "mget", "no-such-command"],
    ["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"],
    ["COMMAND", "GETKEYS", "GET", "k"],
    ["COMMAND", "GETKEYS", "FOO"],
    ["COMMAND", "GETKEYS", "PING", "x"],
    ["COMMAND", "GETKEYS", "GET", "a", "b"],
    ["COMMAND", "GETKEYS", "FOO", "x"],
    ["COMMAND", "FOO"],
  ],
  "SETEX PSETEX SETNX GETEX APPEND STRLEN": () => [
    ["SETEX", "k", "100", "v"],
    ["TTL", "k"],
    ["SETEX", "k", "0", "v"],
    ["SETEX", "k", "-5", "v"],
    ["SETEX", "k", "abc", "v"],
    ["SETEX", "k", "9223372036854775807", "v"],
    ["SETEX", "k", "10"],
    ["PSETEX", "p", "100000", "v"],
    ["TTL", "p"],
    ["PSETEX", "p", "0", "v"],
    ["SETNX", "k", "other"],
    ["SETNX", "fresh", "x"],
    ["GET", "fresh"],
    ["GETEX", "missing", "EX", "abc"],
    ["GETEX", "k"],
    ["GETEX", "k", "EX", "200"],
    ["TTL", "k"],
    ["GETEX", "k", "PX", "300000"],
    ["TTL", "k"],
    ["GETEX", "k", "EXAT", at(400)],
    ["PEXPIRETIME", "k"],
    roundedTtl("k"),
    ["GETEX", "k", "PERSIST"],
    ["TTL", "k"],
    ["GETEX", "k", "EX", "0"],
    ["GETEX", "k", "EX", "abc"],
    ["GETEX", "k", "PERSIST", "EX", "10"],
    ["GETEX", "k", "EX", "10", "PX", "10"],
    ["GETEX", "k", "EX"],
    ["GETEX", "k", "KEEPTTL"],
    ["GETEX", "k", "NX"],
    ["GETEX", "k", "EX", "10", "EX", "20"],
    ["TTL", "k"],
    ["GETEX", "k", "PXAT", "1"],
    ["GET", "k"],
    ["APPEND", "a", "hello"],
    ["APPEND", "a", " world"],
    ["GET", "a"],
    ["STRLEN", "a"],
    ["STRLEN", "missing"],
    ["SET", "t", "v", "EX", "100"],
    ["APPEND", "t", "more"],
    ["TTL", "t"],
    ["APPEND", "a"],
  ],
  "INCRBYFLOAT, Redis's long double formatting": () => [
    ["SET", "f", "10.5"],
    ["INCRBYFLOAT", "f", "0.1"],
    ["INCRBYFLOAT", "new", "0.1"],
    ["INCRBYFLOAT", "new", "0.2"],
    ["INCRBYFLOAT", "new", "-0.3"],
    ["INCRBYFLOAT", "new", "5.0e3"],
    ["INCRBYFLOAT", "new", "1e20"],
    ["INCRBYFLOAT", "new", "-1e20"],
    ["INCRBYFLOAT", "new", "-.5"],
    ["INCRBYFLOAT", "new", "+7."],
    ["INCRBYFLOAT", "new", "1.5e-20"],
    ["SET", "f", "123456789.123456789"],
    ["INCRBYFLOAT", "f", "0"],
    ["SET", "f", "3"],
    ["INCRBYFLOAT", "f", "abc"],
    ["INCRBYFLOAT", "f", "nan"],
    ["INCRBYFLOAT", "f", "inf"],
    ["INCRBYFLOAT", "f", "-Infinity"],
    ["INCRBYFLOAT", "f", " 1"],
    ["INCRBYFLOAT", "f", "1 "],
    ["INCRBYFLOAT", "f", ""],
    ["INCRBYFLOAT", "f", "1e"],
    ["INCRBYFLOAT", "f", "1e5000"],
    ["SET", "s", "not a number"],
    ["INCRBYFLOAT", "s", "1"],
    ["SET", "s", "1e4000"],
    ["INCRBYFLOAT", "s", "1"],
    ["SET", "t", "1", "EX", "100"],
    ["INCRBYFLOAT", "t", "1.25"],
    ["TTL", "t"],
    ["INCRBYFLOAT", "t"],
  ],
  "TOUCH RANDOMKEY EXPIRETIME PEXPIRETIME TIME": () => [
    ["RANDOMKEY"],
    ["SET", "only", "v"],
    ["RANDOMKEY"],
    ["TOUCH", "only", "missing", "only"],
    ["TOUCH"],
    ["EXPIRETIME", "only"],
    ["PEXPIRETIME", "only"],
    ["EXPIRETIME", "missing"],
    ["PEXPIRETIME", "missing"],
    ["PEXPIREAT", "only", "4102444800499"],
    ["EXPIRETIME", "only"],
    ["PEXPIRETIME", "only"],
    ["PEXPIREAT", "only", "4102444800500"],
    ["EXPIRETIME", "only"],
    ["RANDOMKEY", "x"],
    ["TIME", "x"],
  ],
  "SCAN and KEYS: errors and filters": () => [
    ["SET", "k1", "v"],
    ["SET", "other", "v"],
    ["SCAN", "0", "COUNT", "100000", "MATCH", "k*"],
    ["SCAN", "0", "COUNT", "100000", "MATCH", "k*", "TYPE", "string"],
    ["SCAN", "0", "COUNT", "100000", "MATCH", "k*", "TYPE", "STRING"],
    ["SCAN", "0", "COUNT", "100000", "TYPE", "list"],
    ["SCAN", "0", "COUNT", "100000", "TYPE", "nosuchtype"],
    ["SCAN", "0", "MATCH", "nothing*", "COUNT", "100000"],
    ["SCAN", "abc"],
    ["SCAN", "1.5"],
    ["SCAN", "18446744073709551616"],
    ["SCAN", "0", "COUNT", "0"],
    ["SCAN", "0", "COUNT", "-1"],
    ["SCAN", "0", "COUNT", "x"],
    ["SCAN", "0", "MATCH"],
    ["SCAN", "0", "FOO", "bar"],
    ["SCAN"],
    ["KEYS", "k?"],
    ["KEYS", "nothing*"],
    ["KEYS", "[a-k]1"],
    ["KEYS"],
  ],
  "OBJECT and MEMORY: errors and encodings": () => [
    ["SET", "s", "hello"],
    ["SET", "n", "12345"],
    ["SET", "neg", "-42"],
    ["SET", "zeros", "007"],
    ["SET", "plus", "+5"],
    ["SET", "huge", "12345678901234567890"],
    ["SET", "long", "x".repeat(44)],
    ["SET", "longer", "x".repeat(45)],
    ["OBJECT", "ENCODING", "s"],
    ["OBJECT", "ENCODING", "n"],
    ["OBJECT", "ENCODING", "neg"],
    ["OBJECT", "ENCODING", "zeros"],
    ["OBJECT", "ENCODING", "plus"],
    ["OBJECT", "ENCODING", "huge"],
    ["OBJECT", "ENCODING", "long"],
    ["OBJECT", "ENCODING", "longer"],
    ["OBJECT", "ENCODING", "missing"],
    ["OBJECT", "REFCOUNT", "s"],
    ["OBJECT", "FREQ", "s"],
    ["OBJECT", "FREQ", "missing"],
    ["OBJECT", "IDLETIME", "missing"],
    ["OBJECT", "HELP"],
    ["OBJECT", "ENCODING"],
    ["OBJECT", "FOO", "s"],
    ["OBJECT"],
    ["MEMORY", "USAGE", "missing"],
    ["MEMORY", "USAGE", "s", "SAMPLES", "-1"],
    ["MEMORY", "USAGE", "s", "SAMPLES", "x"],
    ["MEMORY", "USAGE", "s", "FOO"],
    ["MEMORY", "USAGE", "s", "FOO", "1"],
    ["MEMORY", "USAGE"],
  ],
  "binary-safe keys and values": () => [
    ["SET", Buffer.from([0, 255, 13, 10, 32]), Buffer.from([13, 10, 0, 128, 200])],
    ["GET", Buffer.from([0, 255, 13, 10, 32])],
    ["MGET", Buffer.from([0, 255, 13, 10, 32]), "missing"],
    ["SET", "emoji", Buffer.from("héllo ✓", "utf8")],
    ["GET", "emoji"],
    ["SET", "empty", ""],
    ["GET", "empty"],
    ["SET", "", "empty key"],
    ["GET", ""],
  ],
};

const redisServer = findExecutable("redis-server");
const skip = redisServer
  ? false
  : "redis-server is not installed (Debian package redis-server): no peer to compare with";

describe("commands: this node vs redis-server, reply for reply", { skip }, () => {
  let peer: SpawnedRedis;
  let node: TestNode;
  before(async () => {
    peer = await spawnRedis({ install: false });
    node = await startCacheNode();
  });
  after(async () => {
    await node?.close();
    await peer?.stop();
  });

  for (const protocol of [2, 3] as const) {
    describe(`RESP${protocol}`, () => {
      let ours: Redis;
      let theirs: Redis;
      before(async () => {
        const options = {
          protocol,
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          commandTimeout: 5_000,
        } as const;
        ours = new Redis({ ...options, port: node.port });
        theirs = new Redis(peer.url, options);
        await Promise.all([ours.connect(), theirs.connect()]);
      });
      after(() => {
        ours?.disconnect();
        theirs?.disconnect();
      });

      for (const [group, steps] of Object.entries(groups)) {
        test(`${group}`, async () => {
          await Promise.all([ours.call("FLUSHALL"), theirs.call("FLUSHALL")]);
          const binary = group.startsWith("binary");
          for (const args of steps()) {
            const [mine, peers] = await Promise.all([
              outcome(ours, args, binary),
              outcome(theirs, args, binary),
            ]);
            if (withinRounding(args, mine, peers)) continue;
            assert.deepEqual(
              normalize(args, mine),
              normalize(args, peers),
              `${args.map(String).join(" ").slice(0, 120)}`,
            );
          }
        });
      }
    });
  }
});
