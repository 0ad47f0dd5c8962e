/**
 * The client's pure routing decisions: the slot map built from CLUSTER SLOTS and patched
 * by MOVED (CA-05, CA-06), redirect and retry replies read as actions, slots of binary
 * (latin1) keys, and in-process request coalescing (CA-20).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { keySlot } from "@casebook/kit/cluster-slot";
import { SingleFlight } from "@casebook/kit/single-flight";
import { decodeEnvelope, encodeEnvelope } from "../src/domain/cache-envelope.ts";
import { parseRedirect, redirectAction, retryKind } from "../src/domain/redirect-reply.ts";
import { parseClusterSlots, SlotMap, slotOfKey } from "../src/domain/slot-map.ts";

const CLUSTER_SLOTS = [
  [0, 5460, ["127.0.0.1", 7000, "id-a"], ["127.0.0.1", 7003, "id-d"]],
  [5461, 10922, ["", 7001, "id-b"]],
  [10923, 16383, ["127.0.0.1", 7002, "id-c", { hostname: "" }]],
];

describe("slot map", () => {
  test("CA-05 slot = CRC16/XMODEM mod 16384: the reference vector and hash tags", () => {
    assert.equal(slotOfKey("123456789"), 0x31c3);
    assert.equal(slotOfKey("{user1000}.following"), slotOfKey("{user1000}.followers"));
    assert.equal(slotOfKey("foo{}{bar}"), keySlot("foo{}{bar}"), "an empty first tag hashes the whole key");
    // latin1 strings are bytes: the same slot as the UTF-8 text those bytes spell.
    const utf8Bytes = Buffer.from("événement:42", "utf8").toString("latin1");
    assert.equal(slotOfKey(utf8Bytes, "latin1"), slotOfKey("événement:42", "utf8"));
  });

  test("CA-06 built from CLUSTER SLOTS: every slot has its primary; an empty host is the replying node's", () => {
    const ranges = parseClusterSlots(CLUSTER_SLOTS, "10.0.0.9");
    assert.deepEqual(ranges[0], {
      first: 0,
      last: 5460,
      primary: "127.0.0.1:7000",
      replicas: ["127.0.0.1:7003"],
    });
    assert.equal(ranges[1]!.primary, "10.0.0.9:7001");
    const map = SlotMap.fromRanges(ranges);
    assert.equal(map.coveredSlots, 16_384);
    assert.equal(map.ownerOf(0), "127.0.0.1:7000");
    assert.equal(map.ownerOf(5461), "10.0.0.9:7001");
    assert.equal(map.ownerOf(16_383), "127.0.0.1:7002");
    assert.deepEqual(map.addresses, ["127.0.0.1:7000", "10.0.0.9:7001", "127.0.0.1:7002"]);
  });

  test("CA-05 a MOVED patches one slot and leaves the others", () => {
    const map = SlotMap.fromRanges(parseClusterSlots(CLUSTER_SLOTS, "127.0.0.1"));
    map.assign(9001, "127.0.0.1:7002");
    assert.equal(map.ownerOf(9001), "127.0.0.1:7002");
    assert.equal(map.ownerOf(9000), "127.0.0.1:7001");
    assert.equal(map.ownerOf(9002), "127.0.0.1:7001");
    assert.throws(() => map.assign(16_384, "x:1"), RangeError);
  });

  test("malformed CLUSTER SLOTS entries are skipped; an empty map owns nothing", () => {
    const ranges = parseClusterSlots(
      [[1, 0, ["h", 1]], [0, 10], "junk", [0, 20000, ["h", 1]], [3, 4, ["h", "x"]]],
      "h",
    );
    assert.deepEqual(ranges, []);
    assert.deepEqual(parseClusterSlots("not an array", "h"), []);
    assert.equal(new SlotMap().ownerOf(0), undefined);
    assert.equal(new SlotMap().coveredSlots, 0);
  });
});

describe("redirect replies", () => {
  test("CA-05 MOVED and ASK name a slot and an address; an empty host means the replying node's", () => {
    assert.deepEqual(parseRedirect("MOVED 3999 127.0.0.1:6381", "127.0.0.1"), {
      kind: "moved",
      slot: 3999,
      address: "127.0.0.1:6381",
    });
    assert.deepEqual(parseRedirect("ASK 12 :7003", "10.1.1.1"), {
      kind: "ask",
      slot: 12,
      address: "10.1.1.1:7003",
    });
    for (const line of ["MOVED 99999 h:1", "MOVED 1 h:0", "ERR MOVED 1 h:1", "MOVED x h:1", "ASK 1 h"]) {
      assert.equal(parseRedirect(line, "h"), undefined, line);
    }
  });

  test("TRYAGAIN and CLUSTERDOWN ask for a delayed retry; other errors are the caller's", () => {
    assert.equal(retryKind("TRYAGAIN Multiple keys request during rehashing of slot"), "tryagain");
    assert.equal(retryKind("CLUSTERDOWN The cluster is down"), "clusterdown");
    assert.deepEqual(redirectAction("CLUSTERDOWN Hash slot not served", "h"), { kind: "clusterdown" });
    assert.equal(redirectAction("ERR syntax error", "h"), undefined);
    assert.equal(redirectAction("WRONGTYPE Operation against a key", "h"), undefined);
  });
});

describe("request coalescer", () => {
  test("CA-20 concurrent calls for one key share one load; the next call after it settles starts afresh", async () => {
    const coalescer = new SingleFlight<number>({ maxInFlightKeys: 10 });
    let loads = 0;
    const work = async () => ++loads;
    const results = await Promise.all(Array.from({ length: 100 }, () => coalescer.do("k", work)));
    assert.deepEqual(new Set(results), new Set([1]));
    assert.deepEqual(coalescer.stats, { started: 1, joined: 99, overflowed: 0 });
    assert.equal(coalescer.inFlight, 0);
    assert.equal(await coalescer.do("k", work), 2);
  });

  test("a failed load fails every joined caller once and is not remembered", async () => {
    const coalescer = new SingleFlight<number>({ maxInFlightKeys: 10 });
    const failing = Promise.all([
      coalescer.do("k", async () => {
        throw new Error("db down");
      }),
      coalescer.do("k", async () => 1),
    ]);
    await assert.rejects(failing, /db down/);
    assert.equal(await coalescer.do("k", async () => 7), 7);
  });

  test("past maxInFlightKeys new keys run uncoalesced instead of growing the map", async () => {
    const coalescer = new SingleFlight<string>({ maxInFlightKeys: 2 });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = [
      coalescer.do("a", () => gate.then(() => "a")),
      coalescer.do("b", () => gate.then(() => "b")),
    ];
    assert.equal(await coalescer.do("c", async () => "c"), "c");
    assert.equal(coalescer.stats.overflowed, 1);
    assert.equal(coalescer.inFlight, 2);
    release();
    assert.deepEqual(await Promise.all(held), ["a", "b"]);
  });
});

describe("cache envelope", () => {
  test("a value travels with δ and its freshness deadline; plain values decode as plain", () => {
    const stored = encodeEnvelope({ payload: 'a:b:{"x":1}', deltaMs: 35.4, freshUntilMs: 1_700_000_300_000 });
    assert.equal(stored, 'cx1:35:1700000300000:a:b:{"x":1}');
    assert.deepEqual(decodeEnvelope(stored), {
      payload: 'a:b:{"x":1}',
      deltaMs: 35,
      freshUntilMs: 1_700_000_300_000,
    });
    for (const plain of ["plain", "cx1:", "cx1:12", "cx1:x:1:v", ""]) {
      assert.deepEqual(
        decodeEnvelope(plain),
        { payload: plain, deltaMs: undefined, freshUntilMs: undefined },
        plain,
      );
    }
  });
});
