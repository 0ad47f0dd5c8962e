/**
 * WAIT numreplicas timeout (CA-14): a client learns whether its writes reached replicas.
 *
 * - In this process (primary + replica nodes): WAIT blocks until the replica acknowledged,
 *   commands pipelined behind it keep their order, a disconnected waiter is dropped, and a
 *   replica refuses WAIT.
 * - Node processes (one primary, one replica): with the replica frozen by SIGSTOP, WAIT
 *   answers 0 at its timeout; once it runs again WAIT answers 1.
 * - INFO and HELLO say cluster mode on a cluster node, standalone elsewhere.
 *
 * The failover half of the proof (a write WAIT confirmed survives it, one it did not is
 * lost) is in failover-split-brain.test.ts.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { type AdminClient, ReplyError } from "../src/cluster/clients/cluster-admin-client.ts";
import { startCacheNode } from "./cache-node.ts";
import {
  adminOf,
  type InProcessNode,
  startInProcessNode,
  startTestCluster,
  type TestCluster,
  waitUntil,
} from "./cluster-harness.ts";

/** INFO's `field:value` lines as a map. */
function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0 && !line.startsWith("#")) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

/** HELLO's RESP2 reply (field, value, field, value…) as an object. */
function helloFields(reply: unknown): Record<string, unknown> {
  const items = reply as unknown[];
  const fields: Record<string, unknown> = {};
  for (let i = 0; i + 1 < items.length; i += 2) fields[String(items[i])] = items[i + 1];
  return fields;
}

describe("WAIT on nodes in this process", { timeout: 60_000 }, () => {
  let primary: InProcessNode;
  let replica: InProcessNode;
  let p: AdminClient;
  let r: AdminClient;

  before(async () => {
    primary = await startInProcessNode();
    replica = await startInProcessNode();
    p = await adminOf(primary);
    r = await adminOf(replica);
    await p.call("CLUSTER", "ADDSLOTSRANGE", 0, 16_383);
    await r.call("CLUSTER", "MEET", "127.0.0.1", primary.port, primary.runtime.busPort);
    await waitUntil(
      "the nodes to meet",
      5_000,
      async () => replica.runtime.state.node(primary.runtime.state.myId) !== undefined,
    );
    await r.call("CLUSTER", "REPLICATE", primary.runtime.state.myId);
    await waitUntil("the replica to sync", 5_000, async () => replica.runtime.sink.state === "connected");
  });

  after(async () => {
    p?.close();
    r?.close();
    await replica?.close();
    await primary?.close();
    for (const node of [primary, replica]) if (node) rmSync(node.dir, { recursive: true, force: true });
  });

  test("CA-14 WAIT 1 answers 1 once the replica applied the write; pipelined commands behind it keep their order", async () => {
    const [set, waited, get, ping] = await Promise.all([
      p.raw("SET", "wait:a", "1"),
      p.raw("WAIT", 1, 0),
      p.raw("GET", "wait:a"),
      p.raw("PING"),
    ]);
    assert.deepEqual([set, waited, get, ping], ["OK", 1, "1", "PONG"]);
    // The acknowledgement came from the replica's side: the value is there.
    assert.equal(replica.keyspace.lookup("wait:a")?.value, "1");
    assert.equal(primary.runtime.source.acknowledged(primary.runtime.source.offset), 1);
  });

  test("CA-14 WAIT answers at most what replicas acknowledged: WAIT 2 with one replica times out with 1; WAIT 0 answers at once", async () => {
    await p.call("SET", "wait:b", "2");
    // The one replica's acknowledgement first (a stalled host may take longer than 150 ms to read it):
    // then WAIT 2 can only time out, with the 1 it has.
    assert.equal(await p.call("WAIT", 1, 5_000), 1);
    assert.equal(await p.call("WAIT", 2, 150), 1);
    assert.equal(await p.call("WAIT", 0, 0), 1);
  });

  test("CA-14 a client that disconnects while blocked in WAIT leaves no waiter behind", async () => {
    const quitter = await adminOf(primary);
    await quitter.call("SET", "wait:c", "3");
    const pending = quitter.raw("WAIT", 5, 0).catch(() => "closed");
    await waitUntil("the WAIT to block", 2_000, async () => primary.runtime.source.waitingClients === 1);
    const info = infoFields(String(await p.call("INFO", "clients")));
    assert.equal(info.get("blocked_clients"), "1");
    quitter.close();
    assert.equal(await pending, "closed");
    await waitUntil("the waiter to go", 2_000, async () => primary.runtime.source.waitingClients === 0);
  });

  test("CA-14 WAIT on a replica is refused; its arguments are checked like Redis's", async () => {
    const refused = (await r.raw("WAIT", 1, 10)) as ReplyError;
    assert.ok(refused instanceof ReplyError);
    assert.match(refused.message, /^ERR WAIT cannot be used with replica instances/);
    assert.equal(
      ((await p.raw("WAIT", "x", 10)) as ReplyError).message,
      "ERR value is not an integer or out of range",
    );
    assert.equal(((await p.raw("WAIT", 1, -1)) as ReplyError).message, "ERR timeout is negative");
  });

  test("INFO and HELLO report cluster mode and the node's role", async () => {
    const info = infoFields(String(await p.call("INFO")));
    assert.equal(info.get("redis_mode"), "cluster");
    assert.equal(info.get("cluster_enabled"), "1");
    assert.equal(info.get("role"), "master");
    assert.equal(info.get("connected_slaves"), "1");
    assert.match(String(await p.call("INFO", "cluster")), /^# Cluster\r\ncluster_enabled:1\r\n$/);
    assert.equal(infoFields(String(await r.call("INFO", "replication"))).get("role"), "slave");
    const hello = helloFields(await p.call("HELLO"));
    assert.equal(hello.mode, "cluster");
    assert.equal(hello.role, "master");
    assert.equal(helloFields(await r.call("HELLO")).role, "replica");
  });
});

describe("WAIT on a standalone node", () => {
  test("CA-14 a standalone node has no replicas: WAIT answers 0 at once; INFO and HELLO say standalone", async () => {
    const node = await startCacheNode();
    const client = await adminOf(node);
    try {
      await client.call("SET", "k", "v");
      assert.equal(await client.call("WAIT", 1, 0), 0);
      const info = infoFields(String(await client.call("INFO")));
      assert.equal(info.get("redis_mode"), "standalone");
      assert.equal(info.get("cluster_enabled"), "0");
      assert.equal(helloFields(await client.call("HELLO")).mode, "standalone");
    } finally {
      client.close();
      await node.close();
    }
  });
});

describe("WAIT with a frozen replica process", { timeout: 60_000 }, () => {
  let harness: TestCluster;
  after(async () => harness?.stop());

  test("CA-14 WAIT 1 answers 0 after its timeout while the replica is stopped (SIGSTOP), and 1 once it runs again", async () => {
    harness = await startTestCluster({ nodes: 2, replicas: 1 });
    const primary = harness.cluster.nodes.find((node) => node.role === "primary")!;
    const replica = harness.cluster.nodes.find((node) => node.role === "replica")!;
    const client = await harness.admin(primary.index);
    assert.equal(await client.call("SET", "frozen:k", "before"), "OK");
    assert.equal(await client.call("WAIT", 1, 5_000), 1, "a running replica acknowledges");
    const timeoutMs = 300;
    process.kill(replica.child.pid!, "SIGSTOP");
    let resumed = false;
    try {
      assert.equal(await client.call("SET", "frozen:k", "during"), "OK", "replication is asynchronous");
      const startMs = performance.now();
      assert.equal(await client.call("WAIT", 1, timeoutMs), 0, "a stopped replica acknowledges nothing");
      const waitedMs = performance.now() - startMs;
      // Timer granularity only: WAIT must not answer before its timeout.
      assert.ok(waitedMs >= timeoutMs - 20, `WAIT answered after ${Math.round(waitedMs)} ms`);
      const pending = client.call("WAIT", 1, 10_000);
      process.kill(replica.child.pid!, "SIGCONT");
      resumed = true;
      assert.equal(await pending, 1, "the resumed replica catches up and acknowledges");
    } finally {
      if (!resumed) process.kill(replica.child.pid!, "SIGCONT");
    }
    const onReplica = await harness.admin(replica.index);
    await onReplica.call("READONLY");
    assert.equal(await onReplica.call("GET", "frozen:k"), "during");
  });
});
