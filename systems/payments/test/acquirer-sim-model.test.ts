import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { defaultBehaviour, mergeBehaviour, planCall } from "../src/sim/acquirer-behaviour.ts";
import { acquirerErrors } from "../src/sim/acquirer-errors.ts";
import { AcquirerState, type AuthorizeInput } from "../src/sim/acquirer-state.ts";
import {
  applyDifferences,
  chooseDifferences,
  feeOf,
  parseSettlementCsv,
  renderSettlementCsv,
  settlementRows,
  utcDay,
} from "../src/sim/settlement-file.ts";

const START_MS = Date.UTC(2026, 9, 22, 12);

function newState(seed = 1, maxPayments = 100) {
  const clock = new ManualClock(START_MS);
  return {
    clock,
    state: new AcquirerState({ clock, rng: seededRandom(seed), maxPayments, maxRefundsPerAuthorization: 3 }),
  };
}

function input(key: string, overrides: Partial<AuthorizeInput> = {}): AuthorizeInput {
  return {
    idempotencyKey: key,
    merchantId: "m1",
    amountMinor: 5000n,
    currency: "BRL",
    cardToken: "tok_visa",
    ...overrides,
  };
}

const approve = { declineRate: 0 };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (acquirerErrors.is(error)) return error.code;
    throw error;
  }
  return undefined;
}

test("one idempotency key authorizes once: repeats return the same authorization and count attempts", () => {
  const { state } = newState();
  const first = state.authorize(input("k1"), approve);
  const second = state.authorize(input("k1"), approve);
  assert.equal(first.replayed, false);
  assert.equal(second.replayed, true);
  assert.equal(second.authorization, first.authorization);
  assert.equal(state.getByKey("k1").attempts, 2);
  assert.deepEqual(
    { authorizations: state.stats().authorizations, attempts: state.stats().authorizationAttempts },
    { authorizations: 1, attempts: 2 },
  );
});

test("the same key with another amount, merchant, currency or card is refused, naming the field", () => {
  const { state } = newState();
  state.authorize(input("k1"), approve);
  for (const [override, field] of [
    [{ amountMinor: 5001n }, "/body/amountMinor"],
    [{ merchantId: "m2" }, "/body/merchantId"],
    [{ currency: "USD" }, "/body/currency"],
    [{ cardToken: "tok_other" }, "/body/cardToken"],
  ] as const) {
    assert.throws(
      () => state.authorize(input("k1", override), approve),
      (error: unknown) =>
        acquirerErrors.is(error, "ACQUIRER_IDEMPOTENCY_MISMATCH") &&
        (error.fields.errors as { field: string }[])[0]?.field === field,
    );
  }
  assert.equal(state.getByKey("k1").attempts, 1);
});

test("a declined authorization stays declined for its key, even when the decline rate drops to 0", () => {
  const { state } = newState();
  const declined = state.authorize(input("k1", { cardToken: "tok_decline_1" }), approve).authorization;
  assert.equal(declined.outcome, "declined");
  assert.equal(declined.declineReason, "do_not_honor");
  assert.equal(
    state.authorize(input("k1", { cardToken: "tok_decline_1" }), approve).authorization.outcome,
    "declined",
  );
  assert.equal(
    codeOf(() => state.capture(declined.id)),
    "ACQUIRER_AUTHORIZATION_DECLINED",
  );
  assert.equal(
    codeOf(() => state.void(declined.id)),
    "ACQUIRER_AUTHORIZATION_DECLINED",
  );
});

test("the decline rate is deterministic for a seed and close to the rate over many draws", () => {
  const outcomes = (seed: number) => {
    const { state } = newState(seed, 10_000);
    return Array.from(
      { length: 2_000 },
      (_, i) => state.authorize(input(`k${i}`), { declineRate: 0.3 }).authorization.outcome,
    );
  };
  const a = outcomes(7);
  assert.deepEqual(a, outcomes(7));
  assert.notDeepEqual(a, outcomes(8));
  const declined = a.filter((o) => o === "declined").length / a.length;
  assert.ok(declined > 0.25 && declined < 0.35, `decline share ${declined}`);
});

test("capture: at most the authorized amount, once; repeating the same capture is a replay", () => {
  const { state } = newState();
  const { id } = state.authorize(input("k1"), approve).authorization;
  assert.equal(
    codeOf(() => state.capture(id, 5001n)),
    "ACQUIRER_CAPTURE_EXCEEDS_AUTHORIZED",
  );
  assert.equal(state.capture(id, 4000n).replayed, false);
  assert.equal(state.capture(id, 4000n).replayed, true);
  assert.equal(
    codeOf(() => state.capture(id, 3000n)),
    "ACQUIRER_ALREADY_CAPTURED",
  );
  assert.equal(
    codeOf(() => state.void(id)),
    "ACQUIRER_ALREADY_CAPTURED",
  );
  assert.equal(
    codeOf(() => state.capture("auth_missing")),
    "ACQUIRER_AUTHORIZATION_NOT_FOUND",
  );
  assert.equal(state.stats().captures, 1);
});

test("void: only before capture; voiding twice is a replay; a voided authorization cannot be captured", () => {
  const { state } = newState();
  const { id } = state.authorize(input("k1"), approve).authorization;
  assert.equal(state.void(id).replayed, false);
  assert.equal(state.void(id).replayed, true);
  assert.equal(
    codeOf(() => state.capture(id)),
    "ACQUIRER_AUTHORIZATION_VOIDED",
  );
  assert.equal(
    codeOf(() => state.refund(id, { idempotencyKey: "r1", amountMinor: 1n })),
    "ACQUIRER_AUTHORIZATION_VOIDED",
  );
});

test("refunds: partial, once per key, never more than captured in total, at most maxRefunds", () => {
  const { state } = newState();
  const { id } = state.authorize(input("k1"), approve).authorization;
  assert.equal(
    codeOf(() => state.refund(id, { idempotencyKey: "r0", amountMinor: 1n })),
    "ACQUIRER_NOT_CAPTURED",
  );
  state.capture(id, 3000n);
  state.refund(id, { idempotencyKey: "r1", amountMinor: 1000n });
  assert.equal(state.refund(id, { idempotencyKey: "r1", amountMinor: 1000n }).replayed, true);
  assert.equal(
    codeOf(() => state.refund(id, { idempotencyKey: "r1", amountMinor: 999n })),
    "ACQUIRER_IDEMPOTENCY_MISMATCH",
  );
  assert.equal(
    codeOf(() => state.refund(id, { idempotencyKey: "r2", amountMinor: 2001n })),
    "ACQUIRER_REFUND_EXCEEDS_CAPTURED",
  );
  state.refund(id, { idempotencyKey: "r2", amountMinor: 1999n });
  state.refund(id, { idempotencyKey: "r3", amountMinor: 1n });
  assert.equal(state.get(id).refundedMinor, 3000n);
  assert.equal(
    codeOf(() => state.refund(id, { idempotencyKey: "r4", amountMinor: 1n })),
    "ACQUIRER_TOO_MANY_REFUNDS",
  );
  assert.deepEqual(
    state.get(id).refunds.map((r) => [r.idempotencyKey, r.amountMinor, r.attempts]),
    [
      ["r1", 1000n, 2],
      ["r2", 1999n, 1],
      ["r3", 1n, 1],
    ],
  );
});

test("maxPayments bounds memory: a new key past it is refused, known keys still replay, reset empties it", () => {
  const { state } = newState(1, 2);
  state.authorize(input("k1"), approve);
  state.authorize(input("k2"), approve);
  assert.equal(
    codeOf(() => state.authorize(input("k3"), approve)),
    "ACQUIRER_CAPACITY_REACHED",
  );
  assert.equal(state.authorize(input("k1"), approve).replayed, true);
  state.reset();
  assert.equal(state.stats().authorizations, 0);
  assert.equal(
    codeOf(() => state.getByKey("k1")),
    "ACQUIRER_AUTHORIZATION_NOT_FOUND",
  );
  assert.equal(state.authorize(input("k3"), approve).replayed, false);
});

test("merchant rate: at most merchantRatePerS new calls per second per merchant, with retryAfterMs", () => {
  const { state, clock } = newState();
  const limited = { declineRate: 0, merchantRatePerS: 2 };
  state.authorize(input("a1"), limited);
  state.authorize(input("a2"), limited);
  clock.advance(250);
  assert.throws(
    () => state.authorize(input("a3"), limited),
    (error: unknown) =>
      acquirerErrors.is(error, "ACQUIRER_RATE_LIMITED") && error.fields.retryAfterMs === 750,
  );
  state.authorize(input("b1", { merchantId: "m2" }), limited);
  clock.advance(750);
  state.authorize(input("a3"), limited);
  assert.equal(state.stats().rateLimited, 1);
});

test("planCall draws only for knobs that are on and is reproducible for a seed", () => {
  const quiet = planCall(defaultBehaviour, seededRandom(1), { mutating: true });
  assert.deepEqual(quiet, { delayMs: 0, fault: { kind: "none" } });
  const noisy = mergeBehaviour(defaultBehaviour, {
    latencyMs: 10,
    latencyJitterMs: 5,
    errorRate: 0.5,
    timeoutAfterChargeRate: 0.5,
  });
  const plans = (seed: number) => {
    const rng = seededRandom(seed);
    return Array.from({ length: 50 }, () => planCall(noisy, rng, { mutating: true }));
  };
  assert.deepEqual(plans(3), plans(3));
  const kinds = new Set(plans(3).map((p) => p.fault.kind));
  assert.deepEqual([...kinds].sort(), ["error", "lost-response", "none"]);
  assert.ok(plans(3).every((p) => p.delayMs >= 10 && p.delayMs <= 15));
  const readOnly = Array.from({ length: 50 }, () => planCall(noisy, seededRandom(4), { mutating: false }));
  assert.ok(readOnly.every((p) => p.fault.kind !== "lost-response"));
  const down = planCall(mergeBehaviour(noisy, { outage: true }), seededRandom(1), { mutating: true });
  assert.deepEqual(down, { delayMs: 0, fault: { kind: "outage", mode: "refuse" } });
});

test("mergeBehaviour refuses a knob out of bounds, naming it", () => {
  assert.throws(() => mergeBehaviour(defaultBehaviour, { declineRate: 1.5 }), /declineRate/);
  assert.throws(() => mergeBehaviour(defaultBehaviour, { latencyMs: -1 }), /latencyMs/);
  assert.equal(mergeBehaviour(defaultBehaviour, { errorRate: 1 }).errorRate, 1);
});

test("settlement rows: captures with a half-up fee, refunds without, ordered by time", () => {
  assert.equal(feeOf(5000n, 150), 75n);
  assert.equal(feeOf(33n, 150), 0n); // 0.495 rounds down
  assert.equal(feeOf(34n, 150), 1n); // 0.51 rounds up
  const { state, clock } = newState();
  const { id } = state.authorize(input("k1"), approve).authorization;
  state.capture(id);
  clock.advance(1_000);
  state.refund(id, { idempotencyKey: "r1", amountMinor: 2000n });
  const day = utcDay("2026-10-22")!;
  const rows = settlementRows(state.operationsBetween(day.startMs, day.endMs), { feeBps: 150 });
  assert.deepEqual(
    rows.map((r) => [
      r.idempotencyKey,
      r.authorizationId,
      r.operation,
      r.amountMinor,
      r.feeMinor,
      r.settledAtMs,
    ]),
    [
      ["k1", id, "capture", 5000n, 75n, START_MS],
      ["r1", id, "refund", 2000n, 0n, START_MS + 1_000],
    ],
  );
  const next = utcDay("2026-10-23")!;
  assert.deepEqual(state.operationsBetween(next.startMs, next.endMs), []);
});

test("utcDay accepts calendar dates only", () => {
  assert.deepEqual(utcDay("2026-10-22"), {
    date: "2026-10-22",
    startMs: Date.UTC(2026, 9, 22),
    endMs: Date.UTC(2026, 9, 23),
  });
  assert.equal(utcDay("2026-02-30"), undefined);
  assert.equal(utcDay("2026-13-01"), undefined);
  assert.equal(utcDay("22/10/2026"), undefined);
});

test("injected differences: distinct rows dropped or changed, unknown rows added, all listed; CSV round-trips", () => {
  const day = utcDay("2026-10-22")!;
  const rows = Array.from({ length: 6 }, (_, i) => ({
    idempotencyKey: `k${i}`,
    authorizationId: `auth_${i}`,
    operation: "capture" as const,
    amountMinor: BigInt(1000 + i),
    currency: "BRL",
    feeMinor: 15n,
    settledAtMs: day.startMs + i,
  }));
  const injected = chooseDifferences(
    rows,
    { dropRows: 2, changeAmounts: 2, unknownRows: 1 },
    seededRandom(9),
    day,
  );
  assert.deepEqual(
    injected,
    chooseDifferences(rows, { dropRows: 2, changeAmounts: 2, unknownRows: 1 }, seededRandom(9), day),
  );
  const touched = injected.filter((d) => d.kind !== "unknown").map((d) => d.row.idempotencyKey);
  assert.equal(new Set(touched).size, 4);
  const published = applyDifferences(rows, injected);
  assert.equal(published.length, 6 - 2 + 1);
  for (const d of injected) {
    const found = published.find((r) => r.idempotencyKey === d.row.idempotencyKey);
    if (d.kind === "dropped") assert.equal(found, undefined);
    else assert.deepEqual(found, d.row);
    if (d.kind === "amount-changed") assert.notEqual(d.row.amountMinor, d.originalAmountMinor);
  }
  assert.deepEqual(parseSettlementCsv(renderSettlementCsv(published)), published);
  assert.throws(
    () => chooseDifferences(rows, { dropRows: 4, changeAmounts: 3, unknownRows: 0 }, seededRandom(1), day),
    RangeError,
  );
});

test("the CSV quotes fields that need it (RFC 4180) and the parser reads them back", () => {
  const row = {
    idempotencyKey: 'a,"b"',
    authorizationId: "auth_1",
    operation: "refund" as const,
    amountMinor: 1n,
    currency: "BRL",
    feeMinor: 0n,
    settledAtMs: START_MS,
  };
  const csv = renderSettlementCsv([row]);
  assert.equal(csv.split("\n")[1], '"a,""b""",auth_1,refund,1,BRL,0,2026-10-22T12:00:00.000Z');
  assert.deepEqual(parseSettlementCsv(csv), [row]);
  assert.throws(() => parseSettlementCsv("nope\n"), /header/);
});

test("every acquirer error code has a 4xx/5xx status and a message", () => {
  for (const [code, spec] of Object.entries(acquirerErrors.specs)) {
    assert.match(code, /^ACQUIRER_[A-Z_]+$/);
    assert.ok(spec.status >= 400 && spec.status < 600, code);
    assert.ok(spec.message.length > 20, code);
  }
});
