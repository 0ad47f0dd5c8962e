/**
 * Primary → replica replication on two nodes in this process: a full sync on attach, then
 * the stream of effects — whatever the command (INCR, SET EX, EXPIRE, MSET, DEL, FLUSHALL),
 * expirations and evictions included — so the replica's keyspace equals the primary's;
 * a replica that lost its link resumes from the backlog without a full sync.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { AdminClient } from "../src/cluster/clients/cluster-admin-client.ts";
import type { Keyspace } from "../src/domain/keyspace.ts";
import { adminOf, type InProcessNode, startInProcessNode, waitUntil } from "./cluster-harness.ts";

/** Every key of `keyspace` with its value and expiry, sorted: two equal snapshots mean equal data. */
function snapshot(node: InProcessNode): string[] {
  const keyspace: Keyspace = node.keyspace;
  const rows: string[] = [];
  for (const key of node.runtime.slotIndex.all()) {
    const entry = keyspace.lookup(key);
    if (entry !== undefined) rows.push(`${key}=${entry.value}@${entry.expiresAtMs}`);
  }
  return rows.sort();
}

async function inSync(primary: InProcessNode, replica: InProcessNode): Promise<void> {
  await waitUntil("the replica to match the primary", 5_000, async () => {
    return replica.runtime.sink.offset === primary.runtime.source.offset;
  });
  assert.deepEqual(snapshot(replica), snapshot(primary));
}

describe("replication", { timeout: 60_000 }, () => {
  let primary: InProcessNode;
  let replica: InProcessNode;
  let p: AdminClient;
  let r: AdminClient;
  const maxmemoryBytes = 64 * 1024;

  before(async () => {
    primary = await startInProcessNode({ maxmemoryBytes });
    replica = await startInProcessNode({ maxmemoryBytes });
    p = await adminOf(primary);
    r = await adminOf(replica);
    await p.call("CLUSTER", "ADDSLOTSRANGE", 0, 16_383);
    for (let i = 0; i < 50; i++) await p.call("SET", `before:${i}`, `v${i}`, "EX", 3_600);
    await r.call("CLUSTER", "MEET", "127.0.0.1", primary.port, primary.runtime.busPort);
    await waitUntil(
      "the nodes to meet",
      5_000,
      async () => replica.runtime.state.node(primary.runtime.state.myId) !== undefined,
    );
    await r.call("CLUSTER", "REPLICATE", primary.runtime.state.myId);
  });

  after(async () => {
    p?.close();
    r?.close();
    await replica?.close();
    await primary?.close();
    for (const node of [primary, replica]) if (node) rmSync(node.dir, { recursive: true, force: true });
  });

  test("CA-17 a new replica gets a full sync: every key, value and expiry", async () => {
    await inSync(primary, replica);
    assert.equal(replica.runtime.sink.fullSyncs, 1);
    assert.equal(snapshot(replica).length, 50);
    assert.deepEqual(await r.call("ROLE"), [
      "slave",
      "127.0.0.1",
      primary.port,
      "connected",
      primary.runtime.source.offset,
    ]);
  });

  test("CA-14 the stream carries effects, so any command replays exactly (INCR, SET EX, EXPIRE, MSET, DEL, GETDEL)", async () => {
    await p.call("INCRBY", "counter", 5);
    await p.call("INCR", "counter");
    await p.call("SET", "session", "s", "EX", 300);
    await p.call("SET", "lock", "token", "NX", "PX", 60_000);
    assert.equal(await p.call("SET", "lock", "other", "NX"), null, "a refused SET NX changes nothing");
    await p.call("MSET", "{m}a", "1", "{m}b", "2");
    await p.call("EXPIRE", "{m}a", 100);
    await p.call("PERSIST", "session");
    await p.call("DEL", "before:0");
    await p.call("GETDEL", "before:1");
    await inSync(primary, replica);
    assert.equal(replica.keyspace.lookup("counter")?.value, "6");
    assert.equal(replica.keyspace.lookup("session")?.expiresAtMs, 0, "PERSIST replicated");
    assert.equal(replica.keyspace.lookup("lock")?.value, "token");
  });

  test("CA-14 SETEX PSETEX SETNX GETEX APPEND INCRBYFLOAT replicate their effects like SET", async () => {
    await p.call("SETEX", "sx", 300, "a");
    await p.call("PSETEX", "psx", 300_000, "b");
    await p.call("SETNX", "snx", "c");
    await p.call("APPEND", "snx", "d");
    await p.call("INCRBYFLOAT", "fl", "0.1");
    await p.call("INCRBYFLOAT", "fl", "0.2");
    await p.call("SET", "gx", "g");
    await p.call("GETEX", "gx", "EX", 600);
    await p.call("GETEX", "sx", "PERSIST");
    await p.call("SET", "gone", "x");
    await p.call("GETEX", "gone", "PXAT", 1);
    await inSync(primary, replica);
    assert.equal(replica.keyspace.lookup("fl")?.value, "0.3");
    assert.equal(replica.keyspace.lookup("snx")?.value, "cd");
    assert.equal(replica.keyspace.lookup("sx")?.expiresAtMs, 0, "GETEX PERSIST replicated");
    assert.ok(replica.keyspace.lookup("gx")!.expiresAtMs > 0, "GETEX EX replicated");
    assert.equal(
      replica.keyspace.lookup("gone"),
      undefined,
      "a GETEX PXAT in the past deletes on the replica too",
    );
  });

  test("CA-02 expirations and evictions on the primary reach the replica as deletions", async () => {
    await p.call("SET", "short", "x", "PX", 30);
    await inSync(primary, replica);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(await p.call("GET", "short"), null, "expired on the primary (lazily, on this read)");
    const evictedBefore = primary.keyspace.stats.evictedKeys;
    for (let i = 0; i < 400; i++) await p.call("SET", `fill:${i}`, "x".repeat(200));
    assert.ok(primary.keyspace.stats.evictedKeys > evictedBefore, "the primary evicted under maxmemory");
    await inSync(primary, replica);
    assert.equal(replica.keyspace.lookup("short"), undefined);
    assert.equal(
      replica.keyspace.stats.evictedKeys,
      0,
      "the replica never evicts on its own: it mirrors the primary",
    );
  });

  test("a replica refuses writes, keyed or not", async () => {
    assert.match(((await r.raw("SET", "k", "v")) as { message: string }).message, /^MOVED \d+ 127\.0\.0\.1:/);
    assert.equal(
      ((await r.raw("FLUSHALL")) as { message: string }).message,
      "READONLY You can't write against a read only replica.",
    );
  });

  test("a replica that lost its link resumes from the backlog (CONTINUE), without a full sync", async () => {
    const sink = replica.runtime.sink;
    const primaryId = primary.runtime.state.myId;
    sink.stop();
    for (let i = 0; i < 20; i++) await p.call("SET", `while-away:${i}`, String(i));
    assert.notEqual(sink.offset, primary.runtime.source.offset);
    sink.follow({ id: primaryId, host: "127.0.0.1", busPort: primary.runtime.busPort });
    await inSync(primary, replica);
    assert.equal(sink.fullSyncs, 1, "still the first full sync only");
    await p.call("FLUSHALL");
    await inSync(primary, replica);
    assert.equal(snapshot(replica).length, 0);
  });
});
