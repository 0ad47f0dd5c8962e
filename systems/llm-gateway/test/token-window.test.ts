/**
 * The window arithmetic of the budgets (domain/token-window.ts) on explicit times: windows
 * turning, debt carried and paid off, settles landing after their window, the waits.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { reserveAll, rollTo, settleOne } from "../src/domain/token-window.ts";

const windowMs = 60_000;

test("LG-06 the reservation is for the maximum: 6,000 of a 10,000 limit leaves room for 4,000 only", () => {
  const first = reserveAll([undefined], [{ limit: 10_000, cost: 6_000 }], { nowMs: 1_000, windowMs });
  assert.deepEqual(first.next, [{ windowId: 0, used: 6_000 }]);
  assert.equal(
    reserveAll(first.next, [{ limit: 10_000, cost: 4_001 }], { nowMs: 2_000, windowMs }).allowed,
    false,
  );
  assert.equal(
    reserveAll(first.next, [{ limit: 10_000, cost: 4_000 }], { nowMs: 2_000, windowMs }).allowed,
    true,
  );
});

test("LG-06 Retry-After is the time to the end of the window that has room", () => {
  const full = [{ windowId: 0, used: 10_000 }];
  const refused = reserveAll(full, [{ limit: 10_000, cost: 1 }], { nowMs: 45_000, windowMs });
  assert.equal(refused.retryAfterMs, 15_000);
  // 25,000 used of 10,000 (debt): 15,000 still owed in window 1, 5,000 in window 2: room there, 75 s away.
  const indebted = reserveAll([{ windowId: 0, used: 25_000 }], [{ limit: 10_000, cost: 5_000 }], {
    nowMs: 45_000,
    windowMs,
  });
  assert.equal(indebted.retryAfterMs, windowMs + 15_000);
});

test("debt: a window starts with the previous windows' overage, paid off one limit per window", () => {
  assert.equal(rollTo({ windowId: 0, used: 25_000 }, 1, 10_000), 15_000);
  assert.equal(rollTo({ windowId: 0, used: 25_000 }, 2, 10_000), 5_000);
  assert.equal(rollTo({ windowId: 0, used: 25_000 }, 3, 10_000), 0);
  assert.equal(rollTo({ windowId: 0, used: 8_000 }, 1, 10_000), 0);
});

test("settle in the reservation's window refunds; after it, a refund is dropped and an excess is charged now", () => {
  const state = { windowId: 0, used: 6_000 };
  const clock = (nowMs: number) => ({ nowMs, windowMs, reservedWindowId: 0 });
  assert.deepEqual(settleOne(state, { limit: 10_000, delta: -3_300 }, clock(30_000)), {
    windowId: 0,
    used: 2_700,
  });
  assert.deepEqual(settleOne(state, { limit: 10_000, delta: -3_300 }, clock(61_000)), {
    windowId: 1,
    used: 0,
  });
  assert.deepEqual(settleOne(state, { limit: 10_000, delta: 500 }, clock(61_000)), {
    windowId: 1,
    used: 500,
  });
});

test("the bound: over N windows the tokens charged are at most N × limit + the debt still owed", () => {
  // A request reserving 1,000 that uses 3,000 (a 3× under-count), every time it is allowed, for 10 windows.
  const limit = 10_000;
  let state: { windowId: number; used: number } | undefined;
  let charged = 0;
  for (let nowMs = 0; nowMs < 10 * windowMs; nowMs += 100) {
    const r = reserveAll([state], [{ limit, cost: 1_000 }], { nowMs, windowMs });
    if (!r.allowed) continue;
    state = settleOne(r.next[0], { limit, delta: 2_000 }, { nowMs, windowMs, reservedWindowId: r.windowId });
    charged += 3_000;
  }
  const owed = rollTo(state, 10, limit);
  assert.ok(charged <= 10 * limit + owed, `charged ${charged}, owed ${owed}`);
  assert.ok(charged > 10 * limit - 3_000, "the limit was used, not starved");
});
