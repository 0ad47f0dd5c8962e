/**
 * The saga's group commit (issue 14, store/saga-step-group.ts): steps submitted together are
 * committed in ONE statement with the single path's effects — each saga's fenced state, its
 * POST's idempotency record (the stored response built before the write, byte for byte what
 * the single path stores), its hold's post, its event — and any refusal inside the group (a
 * lost lease, a key taken over) writes none of it and sends every step to the single path.
 * On PGlite and PostgreSQL, with the real outbox and ledger.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { ManualClock, systemClock } from "@casebook/kit/clock";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { decide, type SagaDecision, type StepOutcome } from "../src/domain/payment-saga.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { outboxEventSink } from "../src/store/payment-events.ts";
import {
  afterStep,
  type ClaimedPayment,
  claimDue,
  finalResponse,
  type Payment,
  paymentView,
} from "../src/store/payment-repository.ts";
import { type SagaStepGroup, type SagaStepOutcome, sagaStepGroup } from "../src/store/saga-step-group.ts";
import { openTestDb, seedPayment } from "./payment-fixture.ts";
import { testOnEngines } from "./payments-full-fixture.ts";

const OWNER = "group-test";
const LEASE_MS = 30_000;
const policy = new BackoffPolicy({
  baseMs: 10,
  capMs: 100,
  budgetMs: 60_000,
  maxAttempts: 10,
  jitter: "none",
});

async function setUp(db: Database) {
  const idempotency = paymentsIdempotencyStore(db);
  const merchants = ["m_a", "m_a", "m_a", "m_b", "m_a", "m_b"];
  for (const [i, merchant] of merchants.entries())
    await seedPayment(db, idempotency, { merchant, key: `k${i}`, amountMinor: BigInt(100 + i) });
  const claimed = await claimDue(db, { owner: OWNER, nowMs: Date.now(), leaseMs: LEASE_MS, maxBatch: 16 });
  assert.equal(claimed.length, merchants.length);
  const group = sagaStepGroup(db, {
    owner: OWNER,
    leaseMs: LEASE_MS,
    clock: systemClock,
    idempotency,
    events: outboxEventSink,
  });
  return { idempotency, claimed, group };
}

function decided(p: Payment, outcome: StepOutcome): SagaDecision {
  return decide(p, outcome, { elapsedMs: 0, policy });
}

function written(outcome: SagaStepOutcome): Payment {
  assert.equal(outcome.kind, "written");
  return (outcome as { payment: Payment }).payment;
}

/** Authorize → capture for every claimed saga, in one group: the claims kept and renewed. */
async function toCapture(group: SagaStepGroup, claimed: readonly ClaimedPayment[]): Promise<Payment[]> {
  const outcomes = await Promise.all(
    claimed.map((p) =>
      group.submit({ payment: p, next: decided(p, { kind: "approved", authorizationId: `au_${p.id}` }) }),
    ),
  );
  return outcomes.map(written);
}

async function rowsOf(db: Database, ids: readonly bigint[]) {
  const { rows } = await db.query<{
    id: bigint;
    step: string;
    status: string;
    lease_owner: string | null;
    lease_version: bigint;
    hold_status: string;
    recovery_point: string;
    key_status: string;
  }>(
    `SELECT p.id, p.step, p.status, p.lease_owner, p.lease_version, t.status AS hold_status,
            k.recovery_point, k.status AS key_status
       FROM payments p JOIN transactions t ON t.id = p.hold_transaction_id
       JOIN idempotency_keys k ON k.merchant_id = p.merchant_id AND k.key = p.idempotency_key
      WHERE p.id = ANY($1::int8[]) ORDER BY p.id`,
    [ids],
  );
  return rows;
}

testOnEngines(
  "steps submitted together commit in one transaction, each with the single path's effects",
  async (t, url) => {
    const { db } = await openTestDb(t, url);
    const { idempotency, claimed, group } = await setUp(db);

    const atCapture = await toCapture(group, claimed);
    assert.deepEqual(group.stats, { batches: 1, items: 6, refused: 0 }, "six steps, one group");
    for (const r of await rowsOf(
      db,
      claimed.map((p) => p.id),
    )) {
      assert.deepEqual(
        [r.step, r.status, r.lease_owner, r.hold_status, r.recovery_point, r.key_status],
        ["capture", "authorized", OWNER, "pending", "saga_capture", "in_progress"],
        "the claim kept for the step due now, the key advanced",
      );
    }

    // One lease lost (another owner took the saga): the group writes nothing, every step goes alone.
    const stale = { ...atCapture[2]!, leaseVersion: atCapture[2]!.leaseVersion - 1n };
    const captured = (p: Payment) => decided(p, { kind: "captured", authorizationId: `au_${p.id}` });
    const refused = await Promise.all(
      atCapture.map((p, i) => group.submit({ payment: i === 2 ? stale : p, next: captured(p) })),
    );
    assert.equal(group.stats.batches, 2);
    assert.deepEqual(
      refused.map((o) => o.kind),
      atCapture.map(() => "alone"),
    );
    const untouched = await rowsOf(
      db,
      claimed.map((p) => p.id),
    );
    for (const r of untouched)
      assert.deepEqual(
        [r.step, r.status, r.lease_owner, r.hold_status, r.recovery_point, r.key_status],
        ["capture", "authorized", OWNER, "pending", "saga_capture", "in_progress"],
        "nothing of the refused group was written",
      );

    // The other five, together again: written, with the single path's effects.
    const outcomes = await Promise.all(
      atCapture.map((p, i) =>
        i === 2
          ? Promise.resolve({ kind: "alone" as const })
          : group.submit({ payment: p, next: captured(p) }),
      ),
    );
    assert.equal(group.stats.batches, 3);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ["written", "written", "alone", "written", "written", "written"],
    );
    const rows = await rowsOf(
      db,
      claimed.map((p) => p.id),
    );
    for (const [i, r] of rows.entries()) {
      const expected =
        i === 2
          ? ["capture", "authorized", OWNER, "pending", "saga_capture", "in_progress"]
          : ["done", "captured", null, "posted", "finished", "completed"];
      assert.deepEqual(
        [r.step, r.status, r.lease_owner, r.hold_status, r.recovery_point, r.key_status],
        expected,
      );
    }

    // The stored response replays what the group committed (PY-13).
    const first = written(outcomes[0]!);
    const replay = await idempotency.begin({
      scope: first.merchantId,
      key: first.idempotencyKey,
      fingerprint: fingerprintRequest({
        method: "POST",
        path: "/v1/payments",
        body: { key: first.idempotencyKey },
      }),
    });
    assert.equal(replay.kind, "replay");
    if (replay.kind === "replay") {
      assert.equal(replay.response.status, 201);
      const body = JSON.parse(new TextDecoder().decode(replay.response.body)) as {
        id: string;
        status: string;
      };
      assert.deepEqual([body.id, body.status], [first.publicId, "captured"]);
      assert.deepEqual(
        Buffer.from(replay.response.body),
        Buffer.from(finalResponse(first).body),
        "built before the write, the stored bytes are what the payment as written answers",
      );
    }

    // The events: one per finished saga, each merchant's in arrival order.
    const { rows: events } = await db.query<{
      ordering_key: string;
      seq: bigint;
      event_id: string;
      payload: Record<string, unknown>;
    }>("SELECT ordering_key, seq, event_id, payload FROM outbox_events ORDER BY ordering_key, seq");
    const finished = outcomes.flatMap((o) => (o.kind === "written" ? [o.payment] : []));
    const expected = ["m_a", "m_b"].flatMap((m) =>
      finished
        .filter((p) => p.merchantId === m)
        .map((p, k) => [`${m}:BRL`, BigInt(k + 1), `payment.captured:${p.publicId}`]),
    );
    assert.deepEqual(
      events.map((e) => [e.ordering_key, e.seq, e.event_id]),
      expected,
    );
    const payloadOf = new Map(events.map((e) => [e.event_id, e.payload]));
    for (const p of finished)
      assert.deepEqual(
        payloadOf.get(`payment.captured:${p.publicId}`),
        { ...paymentView(p), paymentId: p.publicId, merchantId: p.merchantId },
        "the event's payload is the view of the payment as written",
      );
  },
);

testOnEngines(
  "a refusal inside a group rolls all of it back: every step goes to the single path",
  async (t, url) => {
    const { db } = await openTestDb(t, url);
    const { claimed, group } = await setUp(db);
    const atCapture = await toCapture(group, claimed);
    const before = await rowsOf(
      db,
      claimed.map((p) => p.id),
    );

    // A client retry took one key over (its generation moved on): the group must not complete it.
    const taken = atCapture[4]!;
    await db.query(
      "UPDATE idempotency_keys SET generation = generation + 1 WHERE merchant_id = $1 AND key = $2",
      [taken.merchantId, taken.idempotencyKey],
    );
    const outcomes = await Promise.all(
      atCapture.map((p) =>
        group.submit({ payment: p, next: decided(p, { kind: "captured", authorizationId: `au_${p.id}` }) }),
      ),
    );
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      atCapture.map(() => "alone"),
    );
    assert.deepEqual(
      await rowsOf(
        db,
        claimed.map((p) => p.id),
      ),
      before,
      "nothing of the group was written",
    );
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events");
    assert.equal(rows[0]!.n, 0);

    // A partial capture's post names a new ledger transaction: the group never takes it.
    const partial = { ...atCapture[0]!, captureAmountMinor: 50n };
    const [alone] = await Promise.all([
      group.submit({
        payment: partial,
        next: decided(partial, { kind: "captured", authorizationId: "au_p" }),
      }),
    ]);
    assert.equal(alone!.kind, "alone");
    assert.equal(group.stats.batches, 2, "answered without joining a group");
  },
);

testOnEngines(
  "afterStep predicts the row every kind of step writes: what the stored response and the event are built from",
  async (t, url) => {
    const { db } = await openTestDb(t, url);
    const { claimed, idempotency } = await setUp(db);
    const clock = new ManualClock(Date.now() + 1_000);
    const group = sagaStepGroup(db, {
      owner: OWNER,
      leaseMs: LEASE_MS,
      clock,
      idempotency,
      events: outboxEventSink,
    });
    const outcomes: StepOutcome[] = [
      { kind: "approved", authorizationId: "au_1" }, // on to capture: the claim kept and renewed
      { kind: "declined", authorizationId: null, reason: "insufficient_funds" }, // done: the hold voided
      { kind: "unknown", reason: "timeout" }, // on to a status query, later: the claim released
      { kind: "unavailable", reason: "breaker open", retryAfterMs: 2_000 },
      { kind: "rejected", code: "idempotency_mismatch" }, // failed: the hold voided
      { kind: "approved", authorizationId: "au_6" },
    ];
    // The payment as the drive holds it (a claim's `takenOver` is the drive's, not the row's).
    const steps = claimed.map(({ takenOver, ...p }, i) => ({ payment: p, next: decided(p, outcomes[i]!) }));
    const results = await Promise.all(steps.map((step) => group.submit(step)));
    assert.equal(group.stats.batches, 1, "one group");
    for (const [i, outcome] of results.entries()) {
      const { payment, next } = steps[i]!;
      assert.deepEqual(
        written(outcome),
        afterStep(payment, next, clock.nowMs(), LEASE_MS),
        `${outcomes[i]!.kind}: ${next.step} ${next.status}`,
      );
    }
    // A finished one goes on with a capture: predicted too.
    const atCapture = written(results[0]!);
    const next = decided(atCapture, { kind: "captured", authorizationId: "au_1" });
    clock.advance(10);
    assert.deepEqual(
      written(await group.submit({ payment: atCapture, next })),
      afterStep(atCapture, next, clock.nowMs(), LEASE_MS),
    );
  },
);
