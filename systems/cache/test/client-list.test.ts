/**
 * CLIENT LIST / CLIENT INFO: one line per connection with Redis 7.2's fields in Redis's
 * order, so what parses redis-server's output parses ours; the values are this node's.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** `key=value …` → a map (values may be empty: `name=`). */
function parseLine(line: string): Map<string, string> {
  return new Map(
    line
      .trim()
      .split(" ")
      .map((pair) => {
        const at = pair.indexOf("=");
        return [pair.slice(0, at), pair.slice(at + 1)] as [string, string];
      }),
  );
}

/** The field names of redis-server 7.2's CLIENT LIST line, in its order. */
const REDIS_7_2_FIELDS = [
  "id",
  "addr",
  "laddr",
  "fd",
  "name",
  "age",
  "idle",
  "flags",
  "db",
  "sub",
  "psub",
  "ssub",
  "multi",
  "qbuf",
  "qbuf-free",
  "argv-mem",
  "multi-mem",
  "rbs",
  "rbp",
  "obl",
  "oll",
  "omem",
  "tot-mem",
  "events",
  "cmd",
  "user",
  "redir",
  "resp",
  "lib-name",
  "lib-ver",
];

describe("CLIENT LIST and CLIENT INFO", () => {
  let node: TestNode;
  const clients: Redis[] = [];
  const connect = async (name?: string) => {
    const client = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0, protocol: 2 });
    clients.push(client);
    await client.connect();
    if (name !== undefined) await client.call("CLIENT", "SETNAME", name);
    return client;
  };
  before(async () => {
    node = await startCacheNode();
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    await node.close();
  });

  test("one line per connection, Redis 7.2's fields in its order, each client's own values", async () => {
    const api = await connect("api");
    const worker = await connect("worker");
    await worker.call("CLIENT", "SETINFO", "LIB-NAME", "casebook-test");
    await worker.call("GET", "k");
    const text = (await api.call("CLIENT", "LIST")) as string;
    const lines = text.trimEnd().split("\n");
    assert.equal(lines.length, 2);
    for (const line of lines) assert.deepEqual([...parseLine(line).keys()], REDIS_7_2_FIELDS);
    const byName = new Map(lines.map((line) => [parseLine(line).get("name"), parseLine(line)]));
    const mine = byName.get("api")!;
    assert.equal(mine.get("cmd"), "client|list", "a subcommand as container|sub");
    assert.equal(mine.get("id"), String(await api.call("CLIENT", "ID")));
    assert.equal(mine.get("laddr"), `127.0.0.1:${node.port}`);
    assert.match(mine.get("addr")!, /^127\.0\.0\.1:\d+$/);
    assert.equal(mine.get("resp"), "2");
    const other = byName.get("worker")!;
    assert.equal(other.get("cmd"), "get");
    assert.equal(other.get("lib-name"), "casebook-test");
    assert.equal(other.get("flags"), "N");
  });

  test("CLIENT INFO is the caller's line; LIST filters by ID and TYPE; bad options are refused", async () => {
    const probe = await connect("probe");
    const id = Number(await probe.call("CLIENT", "ID"));
    const info = parseLine((await probe.call("CLIENT", "INFO")) as string);
    assert.equal(info.get("name"), "probe");
    assert.equal(info.get("cmd"), "client|info");
    const only = ((await probe.call("CLIENT", "LIST", "ID", String(id))) as string).trimEnd().split("\n");
    assert.deepEqual(
      only.map((line) => parseLine(line).get("id")),
      [String(id)],
    );
    assert.equal(await probe.call("CLIENT", "LIST", "TYPE", "replica"), "");
    assert.ok(((await probe.call("CLIENT", "LIST", "TYPE", "normal")) as string).includes(`id=${id} `));
    await assert.rejects(probe.call("CLIENT", "LIST", "TYPE", "robot"), {
      message: "ERR Unknown client type 'robot'",
    });
    await assert.rejects(probe.call("CLIENT", "LIST", "ID", "x"), { message: "ERR Invalid client ID" });
    await assert.rejects(probe.call("CLIENT", "LIST", "BOGUS"), { message: "ERR syntax error" });
  });

  test("age and idle count seconds since the connection opened and since its last command", async (t) => {
    const quiet = await connect("quiet");
    const watcher = await connect("watcher");
    await sleep(1_100);
    const line = ((await watcher.call("CLIENT", "LIST")) as string)
      .split("\n")
      .map(parseLine)
      .find((fields) => fields.get("name") === "quiet")!;
    t.diagnostic(`quiet: age=${line.get("age")} idle=${line.get("idle")}`);
    assert.ok(Number(line.get("age")) >= 1);
    assert.ok(Number(line.get("idle")) >= 1, "no command since SETNAME a second ago");
    await quiet.call("PING");
    const after = parseLine((await quiet.call("CLIENT", "INFO")) as string);
    assert.equal(after.get("idle"), "0");
  });
});
