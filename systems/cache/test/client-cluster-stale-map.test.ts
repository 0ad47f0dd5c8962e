/**
 * CA-05 when the map reload races the cluster's gossip: right after a slot moves, the node a
 * reload asks may not have learned the move yet and lists the old owner — the very node that
 * just answered -MOVED. Two scripted RESP nodes on loopback stand for that moment (a real
 * cluster gets there only by timing: the flake seen once in CI): node A still lists every
 * slot as its own but refuses the key's slot with MOVED to B. The MOVED patch must win over
 * that stale map, so the next command goes straight to B.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ClusterRouter } from "../src/client/cluster-router.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { allSlotsTo, bulk, type ScriptedNode, scriptedNode } from "./scripted-resp-node.ts";

const KEY = "event:42";
const SLOT = slotOfKey(KEY);

let a: ScriptedNode;
let b: ScriptedNode;

before(async () => {
  b = await scriptedNode((args) => {
    const command = args.map((arg) => arg.toUpperCase()).join(" ");
    if (command === "CLUSTER SLOTS") return allSlotsTo(b.port);
    return args[0]!.toUpperCase() === "GET" ? bulk("from-b") : "+OK\r\n";
  });
  a = await scriptedNode((args) => {
    const command = args.map((arg) => arg.toUpperCase()).join(" ");
    if (command === "CLUSTER SLOTS") return allSlotsTo(a.port); // stale: it has not learned the move
    return args[0]!.toUpperCase() === "GET" ? `-MOVED ${SLOT} 127.0.0.1:${b.port}\r\n` : "+OK\r\n";
  });
});

after(async () => {
  for (const node of [a, b]) await node?.close();
});

test("CA-05 a reload from a node that has not learned the move yet (it lists the node that answered MOVED) does not undo the MOVED patch", async () => {
  const events: RouterEvent[] = [];
  const router = await ClusterRouter.connect({
    seeds: [`127.0.0.1:${a.port}`],
    minRefreshIntervalMs: 0,
    onEvent: (event) => events.push(event),
  });
  try {
    assert.equal(router.ownerOf(SLOT), `127.0.0.1:${a.port}`);
    assert.equal(String(await router.send(KEY, ["GET", KEY])), "from-b");
    await router.refresh(); // the MOVED's background reload, or one more: both ask A first
    assert.ok(
      events.some((event) => event.type === "refresh" && event.address === `127.0.0.1:${a.port}`),
      "the reload read A's stale map",
    );
    assert.equal(router.ownerOf(SLOT), `127.0.0.1:${b.port}`, "the MOVED patch outranks A's stale map");
    assert.equal(
      router.ownerOf(SLOT === 0 ? 1 : 0),
      `127.0.0.1:${a.port}`,
      "the rest of the reload is taken",
    );
    const getsAtA = a.gets;
    assert.equal(String(await router.send(KEY, ["GET", KEY])), "from-b");
    assert.equal(a.gets, getsAtA, "straight to B: no second MOVED");
  } finally {
    await router.close();
  }
});
