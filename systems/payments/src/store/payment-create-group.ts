/**
 * Group commit of new payments (issue 14's second goal): POSTs that arrive together, in one
 * process, create their payments in ONE transaction — their idempotency keys advanced to the
 * saga (`recordMany`, one statement), their holds and rows (`createPayments`: one `ledger_write`
 * batch feeding one INSERT) — so a merchant's two balance rows are locked once per group and held
 * for that statement's answer and the COMMIT, not once per payment.
 *
 * All or nothing (transaction-group.ts): a key a retry took over, a ledger refusal, any error
 * rolls the group back and answers every create `alone`; its request then runs the single path
 * (its own transaction, its own error). A lost database (SQL_UNAVAILABLE) reaches every caller.
 *
 * @example
 * const creates = new PaymentCreateGroup(db, idempotency);
 * const outcome = await creates.submit({ lease, input });
 * const payment = outcome.kind === "written" ? outcome.payment : await createAlone(lease, input);
 */
import type { IdempotencyLease, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { GroupCommitStats } from "@casebook/kit/group-commit";
import { type CreatePaymentInput, createPayments, type Payment } from "./payment-repository.ts";
import {
  type GroupOutcome,
  TakeAlone,
  TransactionGroup,
  type TransactionGroupOptions,
} from "./transaction-group.ts";

/** One POST's create: its idempotency claim (to advance to the saga) and the payment to make. */
export interface PaymentCreate {
  lease: IdempotencyLease;
  input: CreatePaymentInput;
}

type Created = { kind: "written"; payment: Payment };

/** The idempotency key's step once its payment exists (the single path's `advance`). */
export const CREATED_STEP = "saga_authorize";

export class PaymentCreateGroup {
  readonly #group: TransactionGroup<PaymentCreate, Created>;

  constructor(
    db: Database,
    idempotency: IdempotencyStore,
    options: Pick<
      TransactionGroupOptions<PaymentCreate>,
      "maxBatch" | "maxPending" | "maxWaitMs" | "lanes"
    > = {},
  ) {
    this.#group = new TransactionGroup(
      db,
      (tx, creates) => writeCreateGroup(tx, creates, idempotency),
      options,
    );
  }

  /** Queues one create; resolves with its payment, or `alone` (rejects when the database is gone). */
  submit(create: PaymentCreate): Promise<GroupOutcome<Created>> {
    return this.#group.submit(create);
  }

  get stats(): GroupCommitStats {
    return this.#group.stats;
  }

  async drain(): Promise<void> {
    await this.#group.drain();
  }
}

async function writeCreateGroup(
  tx: Queryable,
  creates: readonly PaymentCreate[],
  idempotency: IdempotencyStore,
): Promise<Created[]> {
  const nowMs = Math.max(...creates.map((c) => c.input.nowMs));
  const recorded = await idempotency.recordMany(
    tx,
    creates.map((c) => ({ lease: c.lease, step: CREATED_STEP })),
    nowMs,
  );
  if (recorded.includes(false)) throw new TakeAlone("an idempotency key was taken over by a retry");
  const payments = await createPayments(
    tx,
    creates.map((c) => c.input),
  );
  return payments.map((payment) => ({ kind: "written", payment }));
}
