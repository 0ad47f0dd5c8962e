/**
 * CA-18, hot keys: consistent hashing spreads keys, not popularity. The remedies, each
 * measured on live cache nodes:
 * - the key replicated under several names (key#1 … key#8), written together and read at
 *   random: one key's reads spread over the nodes that hold its copies;
 * - an in-process L1 with a TTL of seconds: repeated reads stop reaching the node until
 *   the TTL passes;
 * - hot-key detection (count-min sketch) deciding which keys get that treatment.
 * (Reads from replicas, the third remedy, need replicas: see the cluster part.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import type { RouterEvent } from "../src/client/key-router.ts";
import type { RingRouter } from "../src/client/ring-router.ts";
import { HotKeyDetector } from "../src/domain/hot-key-detector.ts";
import { HotKeyL1 } from "../src/domain/hot-key-l1.ts";
import { pickReplicaKey, replicaKey, replicaKeys } from "../src/domain/hot-key-replicas.ts";
import { slotOfKey } from "../src/domain/slot-map.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const READS = 4_000;

describe("CA-18 hot keys", () => {
  test("CA-18 copies are named key#1..#N; a hash-tagged key gets the suffix inside its tag, so each copy has its own slot", () => {
    assert.deepEqual(replicaKeys("event:42", 3), ["event:42#1", "event:42#2", "event:42#3"]);
    assert.equal(replicaKey("{event:42}:page", 2), "{event:42#2}:page");
    const tagged = replicaKeys("{event:42}:page", 8);
    assert.equal(new Set(tagged.map((key) => slotOfKey(key))).size, 8, "8 copies, 8 slots");
    const naive = Array.from({ length: 8 }, (_, i) => `{event:42}:page#${i + 1}`);
    assert.equal(
      new Set(naive.map((key) => slotOfKey(key))).size,
      1,
      "a plain suffix would leave them in one slot",
    );
    const picks = new Map<string, number>();
    const random = seededRandom("picks");
    for (let i = 0; i < 8_000; i++) {
      const key = pickReplicaKey("event:42", 8, random);
      picks.set(key, (picks.get(key) ?? 0) + 1);
    }
    assert.equal(picks.size, 8);
    for (const count of picks.values()) assert.ok(count > 850 && count < 1_150, `uniform picks: ${count}`);
  });

  test("CA-18 the L1 serves within its TTL, expires after it, and keeps only maxEntries", () => {
    const clock = new ManualClock();
    const l1 = new HotKeyL1<string>({ maxEntries: 2, ttlMs: 2_000, clock });
    l1.set("a", "A");
    clock.advance(1_999);
    assert.equal(l1.get("a"), "A");
    clock.advance(1);
    assert.equal(l1.get("a"), undefined);
    l1.set("a", "A");
    l1.set("b", "B");
    l1.get("a"); // a is now the most recent
    l1.set("c", "C");
    assert.equal(l1.size, 2);
    assert.equal(l1.get("b"), undefined, "the least recently used went first");
    assert.equal(l1.get("a"), "A");
  });

  test("CA-18 the detector flags a key read often and not the long tail read once", () => {
    const detector = new HotKeyDetector({ capacity: 10_000, threshold: 8 });
    let hotAt = 0;
    for (let read = 1; read <= 20 && hotAt === 0; read++) if (detector.record("event:42")) hotAt = read;
    assert.equal(hotAt, 8, "hot at its 8th read");
    let falseHot = 0;
    for (let i = 0; i < 5_000; i++) if (detector.record(`user:${i}`)) falseHot += 1;
    assert.equal(falseHot, 0);
  });

  describe("on 4 live cache nodes", () => {
    let nodes: TestNode[];
    before(async () => {
      nodes = await Promise.all(Array.from({ length: 4 }, () => startCacheNode()));
    });
    after(() => Promise.all((nodes ?? []).map((node) => node.close())));

    /** GETs each node served for READS reads of event:42, and how many of its copies each node holds. */
    async function readsPerNode(replicas: number): Promise<{ reads: number[]; copies: number[] }> {
      const gets = new Map<string, number>();
      const onEvent = (event: RouterEvent) => {
        if (event.type === "send" && event.command === "GET")
          gets.set(event.address, (gets.get(event.address) ?? 0) + 1);
      };
      const client = CacheClient.ring({ nodes: nodes.map((node) => `127.0.0.1:${node.port}`), onEvent });
      const aside = new CacheAside<string>({
        client,
        random: seededRandom(`replicas-${replicas}`),
        hotKeys: { isHot: (key) => key === "event:42", replicas },
      });
      try {
        await aside.getOrLoad("event:42", async () => "the event page");
        gets.clear();
        for (let i = 0; i < READS; i++)
          assert.equal(await aside.getOrLoad("event:42", async () => "reload"), "the event page");
        const ring = client.router as RingRouter;
        const names = replicas > 1 ? replicaKeys("event:42", replicas) : ["event:42"];
        return {
          reads: nodes.map((node) => gets.get(`127.0.0.1:${node.port}`) ?? 0),
          copies: nodes.map(
            (node) => names.filter((name) => ring.ownerOf(name) === `127.0.0.1:${node.port}`).length,
          ),
        };
      } finally {
        await aside.invalidate("event:42");
        await client.close();
      }
    }

    test("CA-18 8 copies read at random spread one hot key's reads over the nodes; one copy puts them all on one", async (t) => {
      const single = await readsPerNode(1);
      const spread = await readsPerNode(8);
      t.diagnostic(
        `${READS} reads of event:42 per node — 1 copy: ${single.reads.join(" / ")}; ` +
          `8 copies (held ${spread.copies.join(" / ")}): ${spread.reads.join(" / ")}`,
      );
      assert.equal(Math.max(...single.reads), READS, "without copies one node takes every read");
      // Ports (hence ring points) differ per run, so where the 8 copies land does too: each
      // node's reads must match its share of the copies (±150 reads, > 4.5 standard deviations).
      spread.reads.forEach((reads, i) => {
        const expected = (READS * spread.copies[i]!) / 8;
        assert.ok(
          Math.abs(reads - expected) < 150,
          `node ${i}: ${reads} reads for ${spread.copies[i]} copies`,
        );
      });
      // All 8 copies on one of 4 nodes has probability 4/4^8 (6e-5): the reads leave the single node.
      assert.ok(Math.max(...spread.reads) < READS, "the hot key's reads are no longer all on one node");
    });

    test("CA-18 the L1 absorbs repeated reads: 1,000 reads cost the node 0 GETs until the TTL passes", async () => {
      const clock = new ManualClock(1_700_000_000_000);
      let gets = 0;
      const client = CacheClient.ring({
        nodes: nodes.map((node) => `127.0.0.1:${node.port}`),
        onEvent: (event) => {
          if (event.type === "send" && event.command === "GET" && event.key === "event:7") gets += 1;
        },
      });
      const aside = new CacheAside<string>({
        client,
        clock,
        hotKeys: { detect: { capacity: 1_000, threshold: 3 }, l1: { maxEntries: 100, ttlMs: 2_000 } },
      });
      try {
        await client.set("event:7", JSON.stringify("page"), { exS: 300 });
        for (let i = 0; i < 3; i++) await aside.getOrLoad("event:7", async () => "reload");
        assert.equal(gets, 3, "the first reads (before the key is hot) go to the node");
        for (let i = 0; i < 1_000; i++)
          assert.equal(await aside.getOrLoad("event:7", async () => "reload"), "page");
        assert.equal(gets, 3, "then the L1 answers");
        assert.equal(aside.stats["l1-hit"], 1_000);
        clock.advance(2_000);
        await aside.getOrLoad("event:7", async () => "reload");
        assert.equal(gets, 4, "after the TTL one read goes to the node again and refills the L1");
      } finally {
        await client.del("event:7");
        await client.close();
      }
    });
  });
});
