/**
 * Group commit of new payments (issue 14's second goal): POSTs that arrive together, in one
 * process, create their payments in ONE autocommit statement — their idempotency keys advanced to
 * the saga, their holds (one `ledger_write` batch) and their rows — so a merchant's two balance
 * rows are locked once per group and held only while the server runs that statement and commits
 * it: no round trip to this process while they are held (a COMMIT sent by a busy event loop was
 * the longest part of a hold).
 *
 * Before it, two reads that lock nothing: the payments' ids (`nextval`) and the merchants'
 * accounts (kept here once read: a merchant's accounts never change). Inside it, all or nothing:
 * the holds pass through `payments_require` (021) on the count of keys advanced, so a key a retry
 * took over fails the whole statement instead of leaving the others' writes.
 *
 * Any refusal — that one, a ledger error, a merchant without accounts yet (its first payment opens
 * them in a transaction) — answers every create of the group `alone` (transaction-group.ts): its
 * request then runs the single path (its own transaction, its own error). A lost database
 * (SQL_UNAVAILABLE) reaches every caller.
 *
 * @example
 * const creates = new PaymentCreateGroup(db, idempotency);
 * const outcome = await creates.submit({ lease, input });
 * const payment = outcome.kind === "written" ? outcome.payment : await createAlone(lease, input);
 */
import type { IdempotencyLease, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { GroupCommitStats } from "@casebook/kit/group-commit";
import {
  type CreatePaymentInput,
  createPaymentsStatement,
  drawPaymentIds,
  existingMerchantAccounts,
  type MerchantAccounts,
  type NewPayment,
  type Payment,
  type PaymentRow,
  paymentsOf,
} from "./payment-repository.ts";
import { type GroupOutcome, type GroupTuning, TakeAlone, TransactionGroup } from "./transaction-group.ts";

/** One POST's create: its idempotency claim (to advance to the saga) and the payment to make. */
export interface PaymentCreate {
  lease: IdempotencyLease;
  input: CreatePaymentInput;
}

type Created = { kind: "written"; payment: Payment };

/** The idempotency key's step once its payment exists (the single path's `advance`). */
export const CREATED_STEP = "saga_authorize";

/** Merchants (× currency) whose accounts are kept once read; past it the memory starts over. */
const MAX_KNOWN_ACCOUNTS = 10_000;

export class PaymentCreateGroup {
  readonly #group: TransactionGroup<PaymentCreate, Created>;
  readonly #idempotency: IdempotencyStore;
  readonly #accounts = new Map<string, MerchantAccounts>();

  constructor(db: Database, idempotency: IdempotencyStore, options: GroupTuning = {}) {
    this.#idempotency = idempotency;
    this.#group = new TransactionGroup(db, (q, creates) => this.#write(q, creates), {
      ...options,
      transaction: false,
    });
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

  async #write(db: Queryable, creates: readonly PaymentCreate[]): Promise<Created[]> {
    const accounts: MerchantAccounts[] = [];
    for (const { input } of creates) accounts.push(await this.#accountsOf(db, input));
    // Drawn once the group can go.
    const ids = await drawPaymentIds(db, creates.length);
    const payments: NewPayment[] = creates.map(({ input }, i) => ({
      id: ids[i]!,
      input,
      accounts: accounts[i]!,
    }));
    const nowMs = Math.max(...creates.map((c) => c.input.nowMs));
    const statement = createPaymentsStatement(payments, (offset) => {
      const records = creates.map((c) => ({ lease: c.lease, step: CREATED_STEP }));
      const advanced = this.#idempotency.recordManyStatement(records, nowMs, offset);
      const count = `$${offset + advanced.params.length + 1}::int8`;
      return {
        ctes: `advanced AS (${advanced.text}),`,
        holdGuard: `WHERE payments_require((SELECT count(*) FROM advanced) = ${count}, 'an idempotency key was taken over')`,
        params: [...advanced.params, creates.length],
      };
    });
    const { rows } = await db.query<PaymentRow>(statement.text, statement.params);
    return paymentsOf(payments, rows).map((payment) => ({ kind: "written", payment }));
  }

  async #accountsOf(db: Queryable, input: CreatePaymentInput): Promise<MerchantAccounts> {
    const key = `${input.merchantId}\u0000${input.currency}`;
    const known = this.#accounts.get(key);
    if (known !== undefined) return known;
    const found = await existingMerchantAccounts(db, input.merchantId, input.currency);
    if (found === undefined) throw new TakeAlone("a merchant's first payment opens its accounts");
    if (this.#accounts.size >= MAX_KNOWN_ACCOUNTS) this.#accounts.clear();
    this.#accounts.set(key, found);
    return found;
  }
}
