/**
 * CA-06 when the map reload races a failover: the key's primary is dead (its connection
 * refused), and the node a reload asks has already marked it failed but not yet learned which
 * replica was promoted — its CLUSTER SLOTS lists no owner for the key's slot. The client must
 * not fail the command there (a real cluster got there by timing: the flake seen in CI on
 * 2026-12-05, `client-cluster` "a refused connection refreshes the map…", CACHE_CLIENT_NO_NODES):
 * it backs off and reloads again, within its hop budget, until a node names the new owner.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { ClusterRouter } from "../src/client/cluster-router.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { bulk, clusterSlots, type ScriptedNode, type SlotRange, scriptedNode } from "./scripted-resp-node.ts";

const KEY = "failover:event:42";
const SLOT = slotOfKey(KEY);

/** A loopback port nothing listens on (freed at once): a connection there is refused — the dead primary. */
let dead: number;
/** What A's CLUSTER SLOTS says: the dead primary, then the slot unowned, then the promoted replica. */
let view: "before" | "uncovered" | "promoted" = "before";
let reloadsUncovered = 0;
let a: ScriptedNode;
let promoted: ScriptedNode;

/** Every slot but the key's to A; the key's slot to `keyOwner`, or to nobody. */
function slotsAroundKey(keyOwner: number | undefined): SlotRange[] {
  return [
    ...(SLOT > 0 ? [[0, SLOT - 1, a.port] as const] : []),
    ...(keyOwner === undefined ? [] : [[SLOT, SLOT, keyOwner] as const]),
    ...(SLOT < 16383 ? [[SLOT + 1, 16383, a.port] as const] : []),
  ];
}

before(async () => {
  dead = await freePort();
  promoted = await scriptedNode((args) => (args[0]!.toUpperCase() === "GET" ? bulk("v7") : "+OK\r\n"));
  a = await scriptedNode((args) => {
    if (args.map((arg) => arg.toUpperCase()).join(" ") !== "CLUSTER SLOTS") return "+OK\r\n";
    if (view === "before") return clusterSlots([[0, 16383, dead]]);
    if (view === "promoted") return clusterSlots(slotsAroundKey(promoted.port));
    // The first reloads after the kill: the key's slot unowned (its primary failed, no successor yet).
    if (++reloadsUncovered === 3) view = "promoted";
    return clusterSlots(slotsAroundKey(undefined));
  });
});

after(async () => {
  for (const node of [a, promoted]) await node?.close();
});

test("CA-06 a reload that finds the key's slot unowned mid-failover is retried (back off, reload) until a node names the promoted replica", async () => {
  const events: RouterEvent[] = [];
  const router = await ClusterRouter.connect({
    seeds: [`127.0.0.1:${a.port}`],
    maxRedirects: 8,
    retryBaseMs: 5,
    retryCapMs: 20,
    onEvent: (event) => events.push(event),
  });
  try {
    assert.equal(router.ownerOf(SLOT), `127.0.0.1:${dead}`, "the map names the primary before it dies");
    view = "uncovered";
    assert.equal(String(await router.send(KEY, ["GET", KEY])), "v7");
    assert.equal(reloadsUncovered, 3, "the reloads that found the slot unowned did not end the command");
    assert.equal(router.ownerOf(SLOT), `127.0.0.1:${promoted.port}`);
    const refused = events.filter((event) => event.type === "retry" && event.reason === "connect");
    assert.ok(refused.length >= 2, `backed off at each refusal (${refused.length})`);
    assert.equal(promoted.gets, 1, "one GET, at the promoted replica");
  } finally {
    await router.close();
  }
});

test("CA-06 a slot that stays unowned fails the command once the hop budget is spent (bounded, never a loop)", async () => {
  view = "before";
  reloadsUncovered = -1_000_000; // never promoted within this test
  const events: RouterEvent[] = [];
  const router = await ClusterRouter.connect({
    seeds: [`127.0.0.1:${a.port}`],
    maxRedirects: 3,
    retryBaseMs: 1,
    retryCapMs: 2,
    onEvent: (event) => events.push(event),
  });
  try {
    view = "uncovered";
    await assert.rejects(router.send(KEY, ["GET", KEY]), { code: "CACHE_CLIENT_CONNECT_FAILED" });
    const sends = events.filter((event) => event.type === "send");
    assert.equal(sends.length, 4, "maxRedirects + 1 tries, then the refusal is the caller's");
  } finally {
    await router.close();
  }
});
