/**
 * Slots, redirects and the persisted config on two nodes in this process (A serves
 * 0–8191, B 8192–16383): CLUSTER KEYSLOT is kit's CRC16/XMODEM with Redis's hash tags
 * (CA-05), a node answers -MOVED for a slot it does not own, multi-key commands across
 * slots get -CROSSSLOT (CA-07), and a node restarted from its data dir rejoins with its
 * id, epochs and slots.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { crc16Xmodem, hashTag, keySlot } from "@casebook/kit/cluster-slot";
import type { AdminClient } from "../src/cluster/clients/cluster-admin-client.ts";
import { evenSlotRanges, formatRanges, parseRanges, toRanges } from "../src/domain/slot-ranges.ts";
import {
  adminOf,
  type InProcessNode,
  NO_FAILOVER_NODE_TIMEOUT_MS,
  startInProcessNode,
  startTwoNodeCluster,
  waitUntil,
} from "./cluster-harness.ts";

async function clusterOk(admin: AdminClient): Promise<boolean> {
  return ((await admin.call("CLUSTER", "INFO")) as string).includes("cluster_state:ok");
}

describe("slots and redirects", { timeout: 60_000 }, () => {
  let a: InProcessNode;
  let b: InProcessNode;
  let adminA: AdminClient;
  let adminB: AdminClient;

  before(async () => {
    ({ a, b, adminA, adminB } = await startTwoNodeCluster(NO_FAILOVER_NODE_TIMEOUT_MS));
  });

  // Not the pair's close(): a test below restarts `a` on its port, so close what the variables hold now.
  after(async () => {
    await adminA?.close();
    await adminB?.close();
    await a?.close();
    await b?.close();
    for (const node of [a, b]) if (node) rmSync(node.dir, { recursive: true, force: true });
  });

  test("CA-05 CLUSTER KEYSLOT is CRC16/XMODEM mod 16384: 123456789 → 0x31C3 = 12739", async () => {
    assert.equal(crc16Xmodem(new TextEncoder().encode("123456789")), 0x31c3);
    assert.equal(await adminA.call("CLUSTER", "KEYSLOT", "123456789"), 12_739);
    for (const key of ["foo", "user:1000", "", "{}", "a{b}c", "x{}{y}", "é"]) {
      assert.equal(await adminA.call("CLUSTER", "KEYSLOT", key), keySlot(key), key);
    }
  });

  test("CA-05 hash tags by Redis's rules: the first non-empty {…} is hashed", async () => {
    assert.equal(hashTag("{user1000}.following"), "user1000");
    assert.equal(hashTag("foo{}{bar}"), "foo{}{bar}", "an empty first tag means the whole key");
    assert.equal(hashTag("foo{{bar}}zap"), "{bar", "the tag ends at the first }");
    assert.equal(hashTag("foo{bar}{zap}"), "bar", "only the first tag counts");
    assert.equal(await adminA.call("CLUSTER", "KEYSLOT", "{user1000}.following"), keySlot("user1000"));
  });

  test("CA-05 a node answers -MOVED slot host:port for a slot it does not own", async () => {
    const key = "123456789"; // slot 12739, B's
    const moved = (await adminA.raw("GET", key)) as { message: string };
    assert.equal(moved.message, `MOVED 12739 127.0.0.1:${b.port}`);
    const write = (await adminA.raw("SET", key, "v")) as { message: string };
    assert.equal(write.message, `MOVED 12739 127.0.0.1:${b.port}`);
    assert.equal(await adminB.call("SET", key, "v"), "OK");
    assert.equal(await adminB.call("GET", key), "v");
    assert.equal(await adminB.call("CLUSTER", "COUNTKEYSINSLOT", 12_739), 1);
    assert.deepEqual(await adminB.call("CLUSTER", "GETKEYSINSLOT", 12_739, 10), [key]);
  });

  test("CA-07 multi-key commands across slots get -CROSSSLOT; one hash tag keeps them on one node", async () => {
    const owner = keySlot("event:42") < 8192 ? adminA : adminB;
    for (const command of [
      ["MGET", "a", "b"],
      ["MSET", "a", "1", "b", "2"],
      ["DEL", "a", "b"],
      ["EXISTS", "a", "b"],
    ]) {
      const reply = (await owner.raw(...command)) as { message: string };
      assert.equal(reply.message, "CROSSSLOT Keys in request don't hash to the same slot", command.join(" "));
    }
    assert.equal(await owner.call("MSET", "{event:42}:seats", "17", "{event:42}:page", "p"), "OK");
    assert.deepEqual(await owner.call("MGET", "{event:42}:seats", "{event:42}:page"), ["17", "p"]);
    assert.equal(await owner.call("DEL", "{event:42}:seats", "{event:42}:page"), 2);
  });

  test("CLUSTER SLOTS, SHARDS and NODES describe the same layout", async () => {
    const slots = (await adminA.call("CLUSTER", "SLOTS")) as Array<
      [number, number, [string, number, string]]
    >;
    assert.deepEqual(
      slots.map(([first, last, [host, port]]) => [first, last, host, port]),
      [
        [0, 8191, "127.0.0.1", a.port],
        [8192, 16383, "127.0.0.1", b.port],
      ],
    );
    const nodes = (await adminB.call("CLUSTER", "NODES")) as string;
    const mine = nodes.split("\n").find((line) => line.includes("myself"))!;
    assert.match(
      mine,
      new RegExp(
        `^${b.runtime.state.myId} 127\\.0\\.0\\.1:${b.port}@\\d+ myself,master - 0 0 2 connected 8192-16383$`,
      ),
    );
    const shards = (await adminA.call("CLUSTER", "SHARDS")) as unknown[][];
    assert.equal(shards.length, 2);
    assert.equal(await adminA.call("CLUSTER", "MYID"), a.runtime.state.myId);
  });

  test("slot ranges: even split as redis-cli does, and the text form round-trips", () => {
    assert.deepEqual(evenSlotRanges(3), [
      [0, 5460],
      [5461, 10922],
      [10923, 16383],
    ]);
    assert.equal(formatRanges(toRanges([0, 1, 2, 7, 9, 10])), "0-2,7,9-10");
    assert.deepEqual(parseRanges("0-2,7,9-10"), [
      [0, 2],
      [7, 7],
      [9, 10],
    ]);
    assert.equal(parseRanges("5-3"), undefined);
    assert.equal(parseRanges("16384"), undefined);
  });

  test("a restarted node rejoins from its data dir with its id, epochs and slots", async () => {
    const id = a.runtime.state.myId;
    const epoch = a.runtime.state.myself.configEpoch;
    const port = a.port;
    await adminA.close();
    await a.close();
    // B votes A down a node timeout after their last contact: twice it, for the polls and a loaded host.
    await waitUntil(
      "B to see A fail",
      2 * NO_FAILOVER_NODE_TIMEOUT_MS + 5_000,
      async () => !(await clusterOk(adminB)),
    );
    a = await startInProcessNode({ dir: a.dir, port, nodeTimeoutMs: NO_FAILOVER_NODE_TIMEOUT_MS });
    adminA = await adminOf(a);
    assert.equal(await adminA.call("CLUSTER", "MYID"), id);
    assert.equal(a.runtime.state.myself.configEpoch, epoch);
    assert.equal(a.runtime.state.slotCount(id), 8192);
    await waitUntil(
      "the cluster to serve again",
      10_000,
      async () => (await clusterOk(adminA)) && (await clusterOk(adminB)),
    );
  });
});
