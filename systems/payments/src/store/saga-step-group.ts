/**
 * Group commit of saga steps (issue 14's second goal): the steps that finish an acquirer call
 * at about the same time, in one process, are committed together — ONE autocommit statement
 * for N sagas, each table touched by one part of it, instead of a transaction per step. The hot
 * rows every payment of a merchant needs (its two balance rows, its outbox stream row) are then
 * locked once per group and held only while the server runs that statement and commits it:
 * never across a round trip to this process (a transaction of five statements held them across
 * three, each a wait for a busy event loop).
 *
 * The statement's parts, in the order it runs them (the single path's, applyDecision):
 *
 *   1. `states`: every saga's new state, fenced on its lease (`sagaStatesStatement`);
 *   2. `recorded`: the idempotency records of the original POSTs (`recordManyStatement`: the
 *      final response of a finished saga, the recovery point otherwise);
 *   3. `settled`: the holds' posts and voids (`settleHoldsStatement`), ordered by merchant then
 *      hold, so that two groups lock balance rows in one order;
 *   4. the finished sagas' events (the sink's `ctes`: the outbox's `enqueueManyStatement`);
 *   5. a guard that counts each part and raises (`payments_require`, 021) unless every saga
 *      kept its lease, every key was recorded and every hold settled — so all of it commits or
 *      none does. It reads every part, which makes them run in the order above.
 *
 * A finished saga's stored response and event are written in the same statement as its state,
 * so they are built before it, from the payment as it will be written (`afterStep`: the fence
 * makes it predictable); the statement returns the rows as written, which the drive goes on
 * with.
 *
 * All or nothing (transaction-group.ts), with the single path as the fallback: a step the group
 * does not take (a partial capture, whose post names a new ledger transaction), or any refusal —
 * a lease lost, an idempotency key a retry took over, a hold no longer pending, a deadlock —
 * answers every step of the group `alone`, and each caller commits its own step as before (its
 * own transaction, its own retries, its own error: a lost lease is found there). A lost database
 * (SQL_UNAVAILABLE) is not retried alone: every caller of the group gets it.
 *
 * @example
 * const group = sagaStepGroup(db, { owner, leaseMs, clock, idempotency, events: outboxEventSink });
 * const outcome = await group.submit({ payment, next });
 * if (outcome.kind === "alone") await db.transaction((tx) => applyDecision(tx, payment, next, options));
 */

import type { IdempotencyRecord, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { captureAmountOf } from "../domain/payment-saga.ts";
import { settleHoldsStatement } from "./ledger-repository.ts";
import { eventOf, type PaymentEventSink } from "./payment-events.ts";
import {
  afterStep,
  finalResponse,
  type Payment,
  type PaymentRow,
  type SagaStepWrite,
  sagaStatesStatement,
  toPayment,
} from "./payment-repository.ts";
import { type GroupOutcome, type GroupTuning, TransactionGroup } from "./transaction-group.ts";

/** A step's outcome in a group that wrote: committed, with the payment as written. */
type StepWritten = { kind: "written"; payment: Payment };
/** …or to be committed alone. */
export type SagaStepOutcome = GroupOutcome<StepWritten>;

export interface SagaStepGroupOptions extends GroupTuning {
  /** The orchestrator's lease owner: every step of the group is fenced on it. */
  owner: string;
  leaseMs: number;
  clock: Clock;
  idempotency: IdempotencyStore;
  /** Where the finished sagas' events go (PY-11's outbox), in the group's statement. */
  events?: PaymentEventSink;
}

/** The orchestrator's group of steps: submit a step, get its outcome (or `alone`); `stats`, `drain`. */
export type SagaStepGroup = TransactionGroup<SagaStepWrite, StepWritten>;

export function sagaStepGroup(db: Database, options: SagaStepGroupOptions): SagaStepGroup {
  return new TransactionGroup(db, (q, steps) => writeSagaStepGroup(q, steps, options), {
    ...options,
    transaction: false,
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

/** A statement's parts as CTEs, parameters numbered on from the parts before. */
class StatementParts {
  readonly ctes: string[] = [];
  readonly params: unknown[] = [];

  /** The CTE `name AS (…)` of the statement `build` makes for parameters from `$offset+1`. */
  cte(name: string, build: (offset: number) => { text: string; params: unknown[] }): void {
    const part = build(this.params.length);
    this.ctes.push(`${name} AS (${part.text})`);
    this.params.push(...part.params);
  }

  /** CTEs a part names itself; returns the part (what it says of its CTEs). */
  named<P extends { ctes: string; params: unknown[] }>(build: (offset: number) => P): P {
    const part = build(this.params.length);
    this.ctes.push(part.ctes);
    this.params.push(...part.params);
    return part;
  }

  /** A parameter of the statement's own. */
  param(value: unknown, type: string): string {
    this.params.push(value);
    return `$${this.params.length}::${type}`;
  }
}

/** One group as ONE statement (the module comment's parts); one outcome per step, in order. */
async function writeSagaStepGroup(
  db: Queryable,
  steps: readonly SagaStepWrite[],
  options: SagaStepGroupOptions,
): Promise<StepWritten[]> {
  const nowMs = options.clock.nowMs();
  const after = steps.map(({ payment, next }) => afterStep(payment, next, nowMs, options.leaseMs));
  const parts = new StatementParts();
  const guards: string[] = [];
  const expect = (count: string, expected: number, reason: string) =>
    guards.push(`payments_require((${count}) = ${parts.param(expected, "int8")}, '${reason}')`);

  parts.cte("states", (offset) =>
    sagaStatesStatement(steps, { owner: options.owner, nowMs, leaseMs: options.leaseMs }, offset),
  );
  expect("SELECT count(*) FROM states", steps.length, "a saga lease was lost");

  const records = idempotencyRecords(steps, after);
  if (records.length > 0) {
    parts.cte("recorded", (offset) => options.idempotency.recordManyStatement(records, nowMs, offset));
    expect("SELECT count(*) FROM recorded", records.length, "an idempotency key was taken over");
  }

  const holds = holdSettlements(steps);
  if (holds.length > 0) {
    parts.cte("settled", (offset) => settleHoldsStatement(holds, offset));
    expect("SELECT count(*) FILTER (WHERE settled) FROM settled", holds.length, "the ledger refused a hold");
  }

  const finished = after.filter((_, i) => steps[i]!.next.finished);
  const events = options.events;
  if (finished.length > 0 && events !== undefined) {
    const written = parts.named((offset) => events.ctes(finished.map(eventOf), offset));
    expect(`SELECT count(*) FROM ${written.events}`, finished.length, "an event was not written");
  }

  // The guard is the outer side of the join: evaluated once whatever `states` holds.
  const { rows } = await db.query<PaymentRow & { lease_claim_id: bigint }>(
    `WITH ${parts.ctes.join(", ")}
     SELECT s.* FROM (SELECT ${guards.join(" AND ")} AS ok) guard LEFT JOIN states s ON true`,
    parts.params,
  );
  const byId = new Map(rows.map(({ lease_claim_id, ...row }) => [String(lease_claim_id), toPayment(row)]));
  return steps.map(({ payment }) => ({ kind: "written", payment: byId.get(String(payment.id))! }));
}

/** Part 2: the original POSTs' records, a finished saga's response built from the payment as it will be written. */
function idempotencyRecords(steps: readonly SagaStepWrite[], after: readonly Payment[]): IdempotencyRecord[] {
  const records: IdempotencyRecord[] = [];
  steps.forEach(({ payment, next }, i) => {
    // Only the POST that created the payment holds an idempotency record; capture/void requests later do not.
    if (next.intent !== "authorize") return;
    const lease = {
      scope: payment.merchantId,
      key: payment.idempotencyKey,
      generation: payment.idemGeneration,
      recoveryPoint: "saga",
    };
    records.push(
      next.finished ? { lease, response: finalResponse(after[i]!) } : { lease, step: `saga_${next.step}` },
    );
  });
  return records;
}

/** Part 3: the holds' posts and voids, merchant by merchant. */
function holdSettlements(steps: readonly SagaStepWrite[]) {
  return steps
    .filter((s) => s.next.ledger !== "none")
    .sort(
      (a, b) =>
        compare(a.payment.merchantId, b.payment.merchantId) ||
        compare(a.payment.holdTransactionId, b.payment.holdTransactionId),
    )
    .map(({ payment, next }) => ({
      transactionId: payment.holdTransactionId,
      outcome: next.ledger === "post-hold" ? ("posted" as const) : ("voided" as const),
    }));
}

function compare<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
