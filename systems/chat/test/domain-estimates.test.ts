/**
 * The text's numbers reproduced (CH-02, CH-13) and Snowflake's k-order shown on the pure
 * generator (CH-08): no engine, manual clocks.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { decodeSnowflake, SnowflakeGenerator } from "@casebook/kit/snowflake";
import { connectionCeiling, framesFor, messageLoad } from "../src/domain/estimates.ts";

test("CH-02 100M DAU × 40/day = 4B/day ≈ 46k/s, peak 3× ≈ 140k/s, 200 B each ≈ 800 GB/day, 30% = 30M sockets", () => {
  const load = messageLoad({
    dailyActiveUsers: 100e6,
    messagesPerUserDay: 40,
    peakFactor: 3,
    bytesPerMessage: 200,
    connectedShare: 0.3,
  });
  assert.equal(load.messagesPerDay, 4e9);
  assert.equal(Math.round(load.averagePerS / 1_000), 46);
  assert.equal(Math.round(load.peakPerS / 10_000) * 10, 140);
  assert.equal(load.bytesPerDay, 800e9);
  assert.equal(load.openSockets, 30e6);
});

test("CH-13 500 new connections/s × a 2 h maximum lifetime = a ceiling of 3.6M concurrent connections", () => {
  assert.equal(connectionCeiling(500, 2 * 3_600), 3_600_000);
});

test("CH-13 a 128 KB message takes 4 frames of 32 KB; 32 KB + 1 byte takes 2", () => {
  assert.equal(framesFor(128 * 1_024, 32 * 1_024), 4);
  assert.equal(framesFor(32 * 1_024 + 1, 32 * 1_024), 2);
  assert.equal(framesFor(10, 32 * 1_024), 1);
});

test("CH-08 two nodes whose clocks are 30 ms apart issue ids out of the real send order", () => {
  const t0 = Date.UTC(2026, 0, 1);
  const ahead = new ManualClock(t0 + 30);
  const behind = new ManualClock(t0);
  const a = new SnowflakeGenerator({ clock: ahead, workerId: 1 });
  const b = new SnowflakeGenerator({ clock: behind, workerId: 2 });
  const sentFirst = a.next(); // real time t0, node A's clock says t0+30
  behind.advance(10);
  const sentSecond = b.next(); // real time t0+10, node B's clock says t0+10
  assert.ok(sentSecond < sentFirst, "k-ordered by (time, node, sequence), not monotonic across nodes");
  assert.equal(decodeSnowflake(sentFirst).workerId, 1);
  // Within one node ids do increase: the order breaks only across clocks.
  assert.ok(a.next() > sentFirst);
});
