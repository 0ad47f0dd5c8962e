/**
 * WH-20: retry storms. The text's recovery: 500 attempts/s of capacity, 350/s of new work,
 * a 315,000-task backlog, a 150/s margin — and 200 extra retry attempts/s that eat it.
 * A deterministic simulation on a virtual clock, one attempt slot every 2 ms.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { drain } from "../src/domain/capacity.ts";
import { RetryBudget } from "../src/domain/retry-budget.ts";

const CAPACITY_PER_S = 500;
const ARRIVAL_PER_S = 350;
const RETRY_DEMAND_PER_S = 200;
const BACKLOG = 350 * 900;
const SLOT_MS = 1_000 / CAPACITY_PER_S;

interface Recovery {
  /** First attempts waiting (backlog + new work), sampled each second. */
  queuedAt: (s: number) => number;
  drainedAtS: number | undefined;
  worstRetryShare: number;
}

/**
 * Runs `seconds` of recovery. Retries become due at RETRY_DEMAND_PER_S and go first when
 * allowed (they are due earlier: next_attempt_at order); a denied retry stays due.
 */
function recover(seconds: number, budget: RetryBudget | undefined): Recovery {
  let queued = BACKLOG;
  let retriesDue = 0;
  let drainedAtS: number | undefined;
  let worstRetryShare = 0;
  const samples: number[] = [queued];
  for (let slot = 0; slot < seconds * CAPACITY_PER_S; slot++) {
    const nowMs = slot * SLOT_MS;
    queued += ARRIVAL_PER_S / CAPACITY_PER_S;
    retriesDue += RETRY_DEMAND_PER_S / CAPACITY_PER_S;
    if (retriesDue >= 1 && (budget === undefined || budget.tryRetry(nowMs))) retriesDue -= 1;
    else if (queued >= 1) {
      queued -= 1;
      budget?.recordFirstAttempt(nowMs);
    }
    if ((slot + 1) % CAPACITY_PER_S === 0) {
      const second = (slot + 1) / CAPACITY_PER_S;
      samples.push(queued);
      if (drainedAtS === undefined && queued < 1) drainedAtS = second;
      if (budget !== undefined) {
        const w = budget.window(nowMs);
        worstRetryShare = Math.max(worstRetryShare, w.retries / Math.max(1, w.firstAttempts + w.retries));
      }
    }
  }
  return { queuedAt: (s) => samples[s]!, drainedAtS, worstRetryShare };
}

test("WH-20 200 extra retries/s eat the 150/s margin: without a budget the backlog grows", (t) => {
  assert.equal(CAPACITY_PER_S - ARRIVAL_PER_S, 150);
  const run = recover(900, undefined);
  // Retries take 200 of 500 slots: 300/s for 350/s of new work, so 50/s more queue up.
  assert.ok(run.queuedAt(900) > run.queuedAt(0), "the backlog grows instead of draining");
  assert.ok(Math.abs(run.queuedAt(900) - (BACKLOG + 50 * 900)) <= 1, `queued ${run.queuedAt(900)}`);
  assert.equal(run.drainedAtS, undefined);
  t.diagnostic(
    `no budget: ${run.queuedAt(0)} queued at recovery, ${Math.round(run.queuedAt(900))} after 900 s`,
  );
});

test("WH-20 a 20% retry budget keeps new work and the drain going: 315,000 drain in ≈ 6,300 s", (t) => {
  const budget = new RetryBudget({ retryFraction: 0.2, windowMs: 10_000, minRetriesPerS: 0, nowMs: 0 });
  const run = recover(7_000, budget);
  // Retries get at most 20% of 500 = 100/s, first attempts at least 400/s: WH-19's 400/s case.
  const expected = drain({ arrivalPerS: ARRIVAL_PER_S, outageS: 900, processingPerS: 400 }).drainS;
  assert.equal(expected, 6_300);
  assert.ok(run.drainedAtS !== undefined, "drained");
  assert.ok(run.drainedAtS >= expected && run.drainedAtS <= expected + 10, `drained at ${run.drainedAtS} s`);
  assert.ok(run.queuedAt(900) < run.queuedAt(0) - 40 * 900, "the drain progresses from the start");
  assert.ok(run.worstRetryShare <= 0.2 + 1e-9, `retry share peaked at ${run.worstRetryShare}`);
  t.diagnostic(
    `20% budget: drained at ${run.drainedAtS} s (text: 6,300 s at 400/s); retry share ≤ ${run.worstRetryShare.toFixed(3)}`,
  );
});

test("WH-20 the floor keeps retries moving when there is no new work at all", () => {
  const budget = new RetryBudget({ retryFraction: 0.2, windowMs: 10_000, minRetriesPerS: 5, nowMs: 0 });
  let allowed = 0;
  for (let ms = 0; ms < 10_000; ms += 10) if (budget.tryRetry(ms)) allowed += 1;
  // With no first attempts the fraction allows nothing; the floor allows 5/s over the 10 s window.
  assert.equal(allowed, Math.floor((5 * 10) / 0.8));
  const later = budget.window(25_000);
  assert.deepEqual(later, { firstAttempts: 0, retries: 0 }, "the window forgets after it passes");
});

test("WH-20 the budget is a sliding window: allowance comes back as old attempts leave it", () => {
  const budget = new RetryBudget({
    retryFraction: 0.5,
    windowMs: 1_000,
    slots: 10,
    minRetriesPerS: 0,
    nowMs: 0,
  });
  budget.recordFirstAttempt(0, 10);
  assert.equal(budget.allowance(0), 10); // R ≤ 0.5·(10 + R) ⇔ R ≤ 10
  for (let i = 0; i < 10; i++) assert.ok(budget.tryRetry(50));
  assert.equal(budget.tryRetry(50), false);
  assert.equal(budget.allowance(1_000), 0, "the first attempts left the window: no allowance");
  assert.throws(() => new RetryBudget({ retryFraction: 1, nowMs: 0 }), RangeError);
});
