/**
 * Group commit of saga steps (issue 14's second goal): the steps that finish an acquirer call
 * at about the same time, in one process, are committed together — ONE transaction for N
 * sagas, each table touched by one statement, instead of a transaction per step. The hot rows
 * every payment of a merchant needs (its two balance rows, its outbox stream row) are then
 * locked once per group and held for two answers and the COMMIT, not once per payment.
 *
 * Inside one READ COMMITTED transaction, in this order (the single path's, applyDecision):
 *
 *   1. every saga's new state, fenced on its lease (`writeSagaStates`, one statement): a saga
 *      whose lease was lost is answered `lease_lost` and takes no further part;
 *   2. the idempotency records of the original POSTs (`recordMany`, one statement: the final
 *      response of a finished saga, the recovery point otherwise);
 *   3. the holds' posts and voids (`settleHolds`, one statement), ordered by merchant then hold,
 *      so that two groups lock balance rows in one order;
 *   4. the finished sagas' events (`emitFinished`, one statement), in arrival order;
 *   5. COMMIT.
 *
 * All or nothing (transaction-group.ts), with the single path as the fallback: a step the group
 * does not take (a partial capture, whose post names a new ledger transaction), or any refusal in
 * the group — an idempotency key a retry took over, a hold no longer pending, a deadlock — rolls
 * the group back and answers its steps `alone`, and each caller commits its own step as before
 * (its own transaction, its own retries, its own error). A lost database (SQL_UNAVAILABLE) is not
 * retried alone: every caller of the group gets it.
 *
 * @example
 * const group = sagaStepGroup(db, { owner, leaseMs, clock, idempotency, emitFinished });
 * const outcome = await group.submit({ payment, next });
 * if (outcome.kind === "alone") await db.transaction((tx) => applyDecision(tx, payment, next, options));
 */

import type { IdempotencyRecord, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { captureAmountOf } from "../domain/payment-saga.ts";
import { settleHolds } from "./ledger-repository.ts";
import {
  finalResponse,
  type Payment,
  type SagaStepWrite,
  toPayment,
  writeSagaStates,
} from "./payment-repository.ts";
import { type GroupOutcome, type GroupTuning, TakeAlone, TransactionGroup } from "./transaction-group.ts";

/** A step's outcome in a group that wrote: committed, or its lease lost. */
type StepWritten = { kind: "written"; payment: Payment } | { kind: "lease_lost" };
/** …or to be committed alone. */
export type SagaStepOutcome = GroupOutcome<StepWritten>;

export interface SagaStepGroupOptions extends GroupTuning {
  /** The orchestrator's lease owner: every step of the group is fenced on it. */
  owner: string;
  leaseMs: number;
  clock: Clock;
  idempotency: IdempotencyStore;
  /** The finished sagas' events, written in the group's transaction (PY-11's outbox). */
  emitFinished: (tx: Queryable, payments: readonly Payment[]) => Promise<void>;
}

/** The orchestrator's group of steps: submit a step, get its outcome (or `alone`); `stats`, `drain`. */
export type SagaStepGroup = TransactionGroup<SagaStepWrite, StepWritten>;

export function sagaStepGroup(db: Database, options: SagaStepGroupOptions): SagaStepGroup {
  return new TransactionGroup(db, (tx, steps) => writeSagaStepGroup(tx, steps, options), {
    ...options,
    takes: (step) => !isPartialCapture(step),
  });
}

/** A partial capture's post names a new ledger transaction in the payment: the single path's own order. */
function isPartialCapture({ payment, next }: SagaStepWrite): boolean {
  return (
    next.ledger === "post-hold" &&
    captureAmountOf(payment.amountMinor, payment.captureAmountMinor) !== payment.amountMinor
  );
}

/** One group inside its transaction `tx` (the module comment's steps); one outcome per step, in order. */
async function writeSagaStepGroup(
  tx: Queryable,
  steps: readonly SagaStepWrite[],
  options: SagaStepGroupOptions,
): Promise<StepWritten[]> {
  const nowMs = options.clock.nowMs();
  const writes = await writeSagaStates(tx, steps, { owner: options.owner, nowMs, leaseMs: options.leaseMs });
  const written: Written[] = [];
  writes.forEach((write, index) => {
    if (write.won) written.push({ index, payment: toPayment(write.row), next: steps[index]!.next });
  });
  await recordIdempotency(tx, written, options.idempotency, nowMs);
  await settle(tx, written);
  const finished = written.filter((w) => w.next.finished).map((w) => w.payment);
  if (finished.length > 0) await options.emitFinished(tx, finished);
  const outcomes = steps.map((): StepWritten => ({ kind: "lease_lost" }));
  for (const w of written) outcomes[w.index] = { kind: "written", payment: w.payment };
  return outcomes;
}

/** A step whose new state is written: its place in the group, the payment as written, the decision. */
interface Written {
  index: number;
  payment: Payment;
  next: SagaStepWrite["next"];
}

/** Step 2: the original POSTs' records; a key a retry took over sends the group alone. */
async function recordIdempotency(
  tx: Queryable,
  written: readonly Written[],
  idempotency: IdempotencyStore,
  nowMs: number,
): Promise<void> {
  const records: IdempotencyRecord[] = [];
  for (const { payment, next } of written) {
    // Only the POST that created the payment holds an idempotency record; capture/void requests later do not.
    if (next.intent !== "authorize") continue;
    const lease = {
      scope: payment.merchantId,
      key: payment.idempotencyKey,
      generation: payment.idemGeneration,
      recoveryPoint: "saga",
    };
    records.push(
      next.finished ? { lease, response: finalResponse(payment) } : { lease, step: `saga_${next.step}` },
    );
  }
  if (records.length === 0) return;
  const recorded = await idempotency.recordMany(tx, records, nowMs);
  if (recorded.includes(false)) throw new TakeAlone("an idempotency key was taken over by a retry");
}

/** Step 3: the holds' posts and voids, merchant by merchant; a hold the ledger refuses sends the group alone. */
async function settle(tx: Queryable, written: readonly Written[]): Promise<void> {
  const holds = written
    .filter((w) => w.next.ledger !== "none")
    .sort(
      (a, b) =>
        compare(a.payment.merchantId, b.payment.merchantId) ||
        compare(a.payment.holdTransactionId, b.payment.holdTransactionId),
    )
    .map(({ payment, next }) => ({
      transactionId: payment.holdTransactionId,
      outcome: next.ledger === "post-hold" ? ("posted" as const) : ("voided" as const),
    }));
  const refusals = await settleHolds(tx, holds);
  if (refusals.some((r) => r !== undefined)) throw new TakeAlone("the ledger refused a hold's settlement");
}

function compare<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
