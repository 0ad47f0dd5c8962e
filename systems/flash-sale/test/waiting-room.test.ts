/**
 * The waiting room's rules (domain/waiting-room.ts), deterministic on a seeded random source
 * and explicit times: positions (FS-13), the randomised pre-queue, one position per user,
 * admission in batches at the rate under the cap, capacity that cannot leak (the AWS VWR
 * failure), and the position and wait shown to the entrant (FS-20).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { WaitingRoom, type WaitingRoomConfig } from "../src/domain/waiting-room.ts";

const T0 = 1_000_000;
const config: WaitingRoomConfig = {
  admitPerS: 10,
  maxActive: 25,
  graceMs: 5_000,
  sessionMs: 60_000,
  maxEntrants: 100_000,
};

function positionOf(room: WaitingRoom, entrant: string, nowMs: number): number {
  const r = room.join(entrant, nowMs);
  assert.equal(r.kind, "queued");
  return r.kind === "queued" ? r.position : 0;
}

test("FS-13 the pre-queue gets positions 1..k in a random order at the opening; after it, positions are FIFO; one position per user", () => {
  const room = new WaitingRoom(config, seededRandom("pre-queue"));
  const early = Array.from({ length: 1_000 }, (_, i) => `early-${i}`);
  for (const e of early) assert.equal(room.join(e, T0).kind, "pre-queue");
  assert.deepEqual(
    room.join("early-0", T0),
    { kind: "pre-queue", waiting: 1_000 },
    "joining twice keeps one place",
  );
  room.open(T0 + 1_000);
  const positions = early.map((e) => positionOf(room, e, T0 + 1_000));
  assert.deepEqual(
    [...positions].sort((a, b) => a - b),
    Array.from({ length: 1_000 }, (_, i) => i + 1),
  );
  const inJoinOrder = positions.filter((p, i) => p === i + 1).length;
  assert.ok(inJoinOrder < 10, `${inJoinOrder} of 1,000 kept their join order: the draw is random`);
  assert.deepEqual(
    [positionOf(room, "late-a", T0 + 2_000), positionOf(room, "late-b", T0 + 2_001)],
    [1_001, 1_002],
  );
  assert.equal(positionOf(room, "late-a", T0 + 3_000), 1_001, "one position per user");
});

test("FS-13 admission in batches at the configured rate, never more than maxActive live in checkout", () => {
  const room = new WaitingRoom(config, seededRandom(1));
  room.open(T0);
  for (let i = 0; i < 500; i++) room.join(`u${i}`, T0);
  let maxActive = 0;
  const admittedPerS: number[] = [];
  for (let s = 1; s <= 30; s++) {
    let admitted = 0;
    for (let tick = 1; tick <= 4; tick++) {
      const now = T0 + (s - 1) * 1_000 + tick * 250;
      admitted += room.tick(now);
      maxActive = Math.max(maxActive, room.status().active);
      // Admitted entrants come for their token, and half of them finish (buy, give up) at once.
      for (let p = 1; p <= room.status().servingUpTo; p++) {
        if (room.isActive(`u${p}`) && p % 2 === 0) room.leave(`u${p}`);
      }
    }
    admittedPerS.push(admitted);
  }
  assert.ok(
    admittedPerS.every((n) => n <= config.admitPerS),
    `per second: ${admittedPerS}`,
  );
  assert.ok(maxActive <= config.maxActive, `active peaked at ${maxActive}`);
  assert.equal(maxActive, config.maxActive, "the cap, not the rate, limits once half stay");
});

test("abandoned entrants free their capacity after the disconnect grace: the AWS VWR leak cannot happen", () => {
  const room = new WaitingRoom({ ...config, maxActive: 5 }, seededRandom(2));
  room.open(T0);
  for (let i = 0; i < 100; i++) room.join(`u${i}`, T0);
  room.tick(T0 + 1_000);
  assert.deepEqual([room.status().servingUpTo, room.status().active], [5, 5]);
  // Nobody admitted ever comes back: no token fetched, no heartbeat.
  room.tick(T0 + 1_000 + config.graceMs);
  assert.equal(room.status().servingUpTo, 5, "inside the grace the slots are still theirs");
  room.tick(T0 + 1_001 + config.graceMs);
  assert.equal(room.status().servingUpTo, 10, "after it, five new entrants take the five freed slots");
  let now = T0 + 1_001 + config.graceMs;
  for (let round = 0; round < 30; round++) {
    now += config.graceMs + 1;
    room.tick(now);
  }
  assert.equal(room.status().servingUpTo, 100, "a room of abandoners still serves everyone");
  assert.equal(room.admit("u0", now).kind, "expired", "a freed slot is not given back to its old holder");
});

test("an admitted entrant keeps its slot with heartbeats, but never past the session", () => {
  const room = new WaitingRoom({ ...config, maxActive: 1 }, seededRandom(3));
  room.open(T0);
  room.join("a", T0);
  room.join("b", T0);
  room.tick(T0 + 1_000);
  assert.equal(room.admit("a", T0 + 1_000).kind, "admitted");
  let now = T0 + 1_000;
  while (now < T0 + 1_000 + config.sessionMs - 1_000) {
    now += 1_000;
    assert.equal(room.heartbeat("a", now), true);
    room.tick(now);
    assert.equal(room.admit("b", now).kind, "waiting");
  }
  room.tick(T0 + 1_000 + config.sessionMs);
  assert.equal(room.isActive("a"), false);
  assert.equal(room.admit("b", T0 + 1_000 + config.sessionMs).kind, "admitted");
});

test("FS-20 the entrant sees its position, how many are ahead and an estimated wait that matches the actual one at a steady rate", () => {
  const room = new WaitingRoom({ ...config, maxActive: 1_000 }, seededRandom(4));
  room.open(T0);
  for (let i = 1; i <= 300; i++) room.join(`u${i}`, T0);
  const shown = room.admit("u151", T0);
  assert.deepEqual(shown, { kind: "waiting", position: 151, ahead: 150, estimatedWaitMs: 15_100 });
  let now = T0;
  while (room.admit("u151", now).kind !== "admitted") {
    now += 100;
    room.tick(now);
  }
  const actualMs = now - T0;
  assert.ok(
    Math.abs(actualMs - shown.estimatedWaitMs) <= 100,
    `estimated ${shown.estimatedWaitMs} ms, waited ${actualMs} ms`,
  );
});

test("a full room refuses joins; a room not open admits nobody", () => {
  const room = new WaitingRoom({ ...config, maxEntrants: 2 }, seededRandom(5));
  room.join("a", T0);
  room.join("b", T0);
  assert.deepEqual(room.join("c", T0), { kind: "full" });
  assert.equal(room.tick(T0 + 10_000), 0);
  assert.equal(room.admit("a", T0).kind, "pre-queue");
  assert.equal(room.admit("nobody", T0).kind, "unknown");
});
