/**
 * CA-19, big keys: a 5 MB value read 1,000 times a second is 5 GB/s from one node. The
 * client measures the values it moves and reports keys at or over a threshold, with how
 * often they were met and the rate that implies, at most once per interval per key;
 * small values are never reported. On a cache node through cache-aside, then the
 * detector alone with a manual clock for the text's 5 MB × 1,000/s.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import { BigKeyDetector, type BigKeyReport } from "../src/domain/big-key-detector.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const FIVE_MB = 5_000_000;

describe("CA-19 big keys", () => {
  test("CA-19 5 MB read 1,000 times in one second is reported as 5 GB/s; small keys never are", (t) => {
    const clock = new ManualClock();
    const reports: BigKeyReport[] = [];
    const detector = new BigKeyDetector({
      thresholdBytes: 1_048_576,
      reportIntervalMs: 1_000,
      maxTrackedKeys: 100,
      clock,
      onBigKey: (report) => reports.push(report),
    });
    detector.observe("event:42:page", FIVE_MB, "write");
    assert.deepEqual(reports, [{ key: "event:42:page", bytes: FIVE_MB, op: "write", seen: 1, bytesPerS: 0 }]);
    for (let i = 0; i < 1_000; i++) {
      clock.advance(1);
      detector.observe("event:42:page", FIVE_MB, "read");
      detector.observe(`small:${i}`, 1_000, "read");
    }
    assert.equal(reports.length, 2, "one report at the write, one after the interval: not one per read");
    const last = reports[1]!;
    t.diagnostic(`report: ${JSON.stringify(last)} (${(last.bytesPerS / 1e9).toFixed(1)} GB/s)`);
    assert.deepEqual(last, {
      key: "event:42:page",
      bytes: FIVE_MB,
      op: "read",
      seen: 1_000,
      bytesPerS: 5_000_000_000,
    });
    assert.ok(reports.every((report) => !report.key.startsWith("small:")));
    detector.observe("event:7:page", 2_000_000, "write");
    assert.deepEqual(detector.biggest(5), [
      { key: "event:42:page", bytes: FIVE_MB },
      { key: "event:7:page", bytes: 2_000_000 },
    ]);
  });

  test("tracking is bounded: past maxTrackedKeys new big keys are reported but not remembered", () => {
    const reports: BigKeyReport[] = [];
    const detector = new BigKeyDetector({
      thresholdBytes: 10,
      reportIntervalMs: 60_000,
      maxTrackedKeys: 2,
      clock: new ManualClock(),
      onBigKey: (report) => reports.push(report),
    });
    for (const key of ["a", "b", "c"]) detector.observe(key, 100, "write");
    assert.equal(reports.length, 3);
    assert.deepEqual(
      detector.biggest(10).map((entry) => entry.key),
      ["a", "b"],
    );
  });

  describe("through cache-aside on a cache node", () => {
    let node: TestNode;
    before(async () => {
      node = await startCacheNode();
    });
    after(() => node.close());

    test("CA-19 a 5 MB value written and read through cache-aside is reported; a 1 KB one is not", async () => {
      const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
      const reports: BigKeyReport[] = [];
      const clock = new ManualClock(1_700_000_000_000);
      const aside = new CacheAside<string>({
        client,
        clock,
        bigKeys: {
          thresholdBytes: 1_048_576,
          reportIntervalMs: 1_000,
          onBigKey: (report) => reports.push(report),
        },
      });
      try {
        const page = "x".repeat(FIVE_MB);
        assert.equal((await aside.getOrLoad("big:page", async () => page)).length, FIVE_MB);
        assert.equal(await aside.getOrLoad("small:page", async () => "y".repeat(1_000)), "y".repeat(1_000));
        assert.equal(reports.length, 1);
        assert.equal(reports[0]!.key, "big:page");
        assert.equal(reports[0]!.op, "write");
        assert.ok(reports[0]!.bytes > FIVE_MB, "the stored size (JSON and envelope included)");
        for (let i = 0; i < 3; i++) await aside.getOrLoad("big:page", async () => page);
        clock.advance(1_000);
        await aside.getOrLoad("big:page", async () => page);
        assert.equal(reports.length, 2);
        assert.deepEqual([reports[1]!.op, reports[1]!.seen], ["read", 4]);
      } finally {
        await client.del("big:page", "small:page");
        await client.close();
      }
    });
  });
});
