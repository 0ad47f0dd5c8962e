/**
 * Replies where this node differs from a standalone redis-server on purpose, or that a
 * differential test cannot compare (versions, ids, server-specific text):
 * - one database, as a Redis Cluster node: SELECT n > 0 is "DB index is out of range";
 * - no persistence (the database is the source of truth): CONFIG SET save/appendonly refuse;
 * - CLIENT SETINFO (Redis 7.2, which ioredis sends on connect) is supported;
 * - HELLO, INFO, COMMAND COUNT/DOCS/LIST describe this node;
 * - CONFIG GET requirepass does not echo the password (only its SHA-256 is kept).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { allCommands } from "../src/api/commands/all-commands.ts";
import { REQUIREPASS_HIDDEN } from "../src/api/commands/config-params.ts";
import { rawRequest, startCacheNode, type TestNode } from "./cache-node.ts";

function multibulk(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

describe("commands: this node's own replies", () => {
  let node: TestNode;
  let redis: Redis;
  before(async () => {
    node = await startCacheNode();
    redis = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0, protocol: 2 });
    await redis.connect();
  });
  after(async () => {
    redis.disconnect();
    await node.close();
  });

  test("HELLO 3 switches to RESP3 and describes the node; HELLO 2 switches back", async () => {
    const reply = await rawRequest(
      node.port,
      multibulk("HELLO", "3", "SETNAME", "probe") + multibulk("CLIENT", "GETNAME") + multibulk("HELLO", "2"),
      (r) => r.includes("*14\r\n") && r.endsWith("*0\r\n") && r.split("*0\r\n").length === 3,
    );
    assert.match(
      reply,
      /^%7\r\n\$6\r\nserver\r\n\$5\r\nredis\r\n\$7\r\nversion\r\n\$5\r\n7\.2\.0\r\n\$5\r\nproto\r\n:3\r\n\$2\r\nid\r\n:\d+\r\n\$4\r\nmode\r\n\$10\r\nstandalone\r\n\$4\r\nrole\r\n\$6\r\nmaster\r\n\$7\r\nmodules\r\n\*0\r\n\$5\r\nprobe\r\n\*14\r\n/,
    );
  });

  test("one database only: SELECT 0 is OK, any other index is out of range", async () => {
    assert.equal(await redis.call("SELECT", "0"), "OK");
    await assert.rejects(redis.call("SELECT", "1"), { message: "ERR DB index is out of range" });
  });

  test("CLIENT SETINFO, CLIENT ID and CLIENT HELP", async () => {
    assert.equal(await redis.call("CLIENT", "SETINFO", "LIB-NAME", "casebook-test"), "OK");
    assert.equal(await redis.call("CLIENT", "SETINFO", "lib-ver", "1.0"), "OK");
    await assert.rejects(redis.call("CLIENT", "SETINFO", "color", "red"), {
      message: "ERR Unrecognized option 'color'",
    });
    assert.equal(typeof (await redis.call("CLIENT", "ID")), "number");
    assert.ok(((await redis.call("CLIENT", "HELP")) as string[]).length > 0);
  });

  test("no persistence: save and appendonly keep their values; port is immutable", async () => {
    assert.equal(await redis.call("CONFIG", "SET", "save", ""), "OK");
    await assert.rejects(redis.call("CONFIG", "SET", "save", "3600 1"), {
      message:
        "ERR CONFIG SET failed (possibly related to argument 'save') - this node has no persistence: the database is the source of truth",
    });
    await assert.rejects(redis.call("CONFIG", "SET", "appendonly", "yes"), /no persistence/);
    await assert.rejects(redis.call("CONFIG", "SET", "port", "1"), {
      message: "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config",
    });
    await assert.rejects(redis.call("CONFIG", "SET", "maxmemory-samples", "65"), /between 1 and 64/);
    assert.equal(await redis.call("CONFIG", "SET", "maxmemory-samples", "10", "lfu-log-factor", "20"), "OK");
    assert.deepEqual(await redis.call("CONFIG", "GET", "maxmemory-samples"), ["maxmemory-samples", "10"]);
    await redis.call("CONFIG", "SET", "maxmemory-samples", "5", "lfu-log-factor", "10");
  });

  test("CONFIG GET requirepass never echoes the password: only its hash is kept", async () => {
    assert.deepEqual(await redis.config("GET", "requirepass"), ["requirepass", ""]);
    assert.equal(await redis.config("SET", "requirepass", "pw"), "OK");
    const [, shown] = (await redis.config("GET", "requirepass")) as string[];
    assert.equal(shown, REQUIREPASS_HIDDEN);
    assert.notEqual(shown, "pw");
    assert.equal(await redis.config("SET", "requirepass", ""), "OK");
    assert.deepEqual(await redis.config("GET", "requirepass"), ["requirepass", ""]);
  });

  test("INFO reports the fields tools and dashboards read", async () => {
    await redis.set("info:k", "v", "EX", 100);
    await redis.get("info:k");
    await redis.get("info:missing");
    const info = await redis.info();
    for (const section of [
      "Server",
      "Clients",
      "Memory",
      "Persistence",
      "Stats",
      "Replication",
      "CPU",
      "Keyspace",
    ]) {
      assert.ok(info.includes(`# ${section}\r\n`), section);
    }
    const field = (name: string) => new RegExp(`(?:^|\\r\\n)${name}:([^\\r]*)`).exec(info)?.[1];
    for (const name of [
      "redis_version",
      "tcp_port",
      "connected_clients",
      "used_memory",
      "maxmemory",
      "maxmemory_policy",
      "keyspace_hits",
      "keyspace_misses",
      "evicted_keys",
      "expired_keys",
      "loading",
    ]) {
      assert.notEqual(field(name), undefined, name);
    }
    assert.equal(field("loading"), "0", "ioredis's ready check");
    assert.ok(Number(field("keyspace_hits")) >= 1);
    assert.ok(Number(field("keyspace_misses")) >= 1);
    assert.match(info, /\r\ndb0:keys=\d+,expires=\d+,avg_ttl=0\r\n/);
    const memoryOnly = await redis.info("memory");
    assert.ok(memoryOnly.startsWith("# Memory\r\n") && !memoryOnly.includes("# Server"));
    assert.equal(await redis.info("no-such-section"), "");
  });

  test("COMMAND COUNT, LIST and DOCS come from the command table", async () => {
    const names = allCommands.map((spec) => spec.name);
    assert.equal(await redis.call("COMMAND", "COUNT"), names.length);
    assert.deepEqual(((await redis.call("COMMAND", "LIST")) as string[]).sort(), [...names].sort());
    const docs = (await redis.call("COMMAND", "DOCS", "get")) as unknown[];
    assert.equal(docs[0], "get");
    assert.ok((docs[1] as string[]).includes("Returns the string value of a key."));
    const all = (await redis.call("COMMAND")) as unknown[][];
    assert.equal(all.length, names.length);
    const mset = all.find((info) => info[0] === "mset")!;
    assert.deepEqual(
      mset.slice(1, 6),
      [-3, ["write", "denyoom"], 1, -1, 2],
      "arity, flags and key positions (first, last, step)",
    );
  });

  test("the -OOM reply is Redis's, byte for byte", async () => {
    await redis.call("CONFIG", "SET", "maxmemory", "1", "maxmemory-policy", "noeviction");
    try {
      const reply = await rawRequest(node.port, multibulk("SET", "oom", "value"), (r) => r.endsWith("\r\n"));
      assert.equal(reply, "-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    } finally {
      await redis.call("CONFIG", "SET", "maxmemory", "0");
    }
  });
});
