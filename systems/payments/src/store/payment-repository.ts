/**
 * Payments and their sagas in SQL (schema: migrations/003_payments.sql).
 *
 * - `createPayment` writes, in the caller's transaction, the payment row, its saga state and the
 *   reserve step: a PENDING ledger hold customer_funds → merchant_pending (`pay:<id>:reserve`).
 * - `claimDue` hands due sagas to one orchestrator through the leased claim queue (`sagaQueue`,
 *   infra lease-queue.ts): `FOR UPDATE SKIP LOCKED` so concurrent claimers never wait on or share
 *   a row, plus a lease (`lease_owner`, `lease_expires_at`) so a claim outlives the claiming
 *   transaction, and a `lease_version` bump that fences every later write. It can also take
 *   back at once the owner's own sagas a database failure stranded (`reclaimOwn`).
 * - `applyDecision` commits one saga step: the new state (compare-and-set on lease_version and owner),
 *   its ledger action (post or void the hold) and the idempotency record (advance, or complete
 *   with the final response), all in ONE transaction: a response is stored iff its effects are.
 *
 * @example
 * const created = await db.transaction((tx) => createPayment(tx, input));
 * const claimed = await claimDue(db, { owner: "worker-1", nowMs, leaseMs: 30_000, maxBatch: 10 });
 */

import type { IdempotencyLease, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import { type Claimed, type FencedWrite, type Lease, LeaseQueue } from "@casebook/infra/sql/lease-queue";
import type { Queryable } from "@casebook/infra/sql/sql";
import { paymentAcquirerKey } from "../domain/derived-keys.ts";
import { normalizeTransfer } from "../domain/ledger.ts";
import {
  captureAmountOf,
  type PaymentStatus,
  type SagaDecision,
  type SagaIntent,
  type SagaState,
  type SagaStep,
} from "../domain/payment-saga.ts";
import { paymentErrors } from "../errors.ts";
import { postPartially } from "./ledger-partial-post.ts";
import { settleHold } from "./ledger-repository.ts";
import { ledgerWriteError, ledgerWriteStatement } from "./ledger-write.ts";
import {
  type MerchantAccounts as AccountsByRole,
  merchantAccountsIfComplete,
  ensureMerchantAccounts as provisionMerchantAccounts,
} from "./merchant-accounts.ts";

export interface MerchantAccounts {
  customerFunds: bigint;
  merchantPending: bigint;
  merchantAvailable: bigint;
}

export interface Payment extends SagaState {
  /** Internal: foreign keys, ledger keys, lease queue. Never shown by the API (publicId is). */
  id: bigint;
  /** What the API shows and routes take: `pay_…`, or the old decimal id of a payment from before 013. */
  publicId: string;
  merchantId: string;
  idempotencyKey: string;
  acquirerKey: string;
  amountMinor: bigint;
  currency: string;
  cardToken: string;
  declineReason: string | null;
  failure: string | null;
  nextAttemptAt: Date;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** Bumped by every claim and step: the fence of the compare-and-set (lease-queue.ts). */
  leaseVersion: bigint;
  idemGeneration: number;
  holdTransactionId: bigint;
  /** The part a merchant asked to capture (PY-16); null: all of it. */
  captureAmountMinor: bigint | null;
  /** After a partial capture, the posted transfer refunds reverse; null: the hold itself was posted. */
  captureTransactionId: bigint | null;
  capturedMinor: bigint;
  refundedMinor: bigint;
  startedAt: Date;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** A claimed payment; `takenOver` when it was leased before (an expired lease, or its owner's own stranded one). */
export interface ClaimedPayment extends Payment {
  takenOver: boolean;
}

export interface CreatePaymentInput {
  merchantId: string;
  idempotencyKey: string;
  amountMinor: bigint;
  currency: string;
  cardToken: string;
  capture: boolean;
  idemGeneration: number;
  nowMs: number;
  /** When set, the creator holds the saga's lease (it drives the saga inline). */
  leaseOwner?: string;
  leaseMs?: number;
}

/** A `payments` row as the driver returns it. */
export interface PaymentRow {
  id: bigint;
  public_id: string;
  merchant_id: string;
  idempotency_key: string;
  acquirer_key: string;
  amount_minor: bigint;
  currency: string;
  card_token: string;
  capture: boolean;
  status: PaymentStatus;
  decline_reason: string | null;
  failure: string | null;
  step: SagaStep;
  intent: SagaIntent;
  attempts: number;
  next_attempt_at: Date;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  lease_version: bigint;
  idem_generation: number;
  acquirer_authorization_id: string | null;
  hold_transaction_id: bigint;
  capture_amount_minor: bigint | null;
  capture_transaction_id: bigint | null;
  captured_minor: bigint;
  refunded_minor: bigint;
  started_at: Date;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/**
 * Every column a payment statement returns, named: not `*`, so each such statement can be
 * prepared (infra's statement-names.ts leaves `*` unnamed — a column added by a migration would
 * change a prepared result). A `Record` over PaymentRow's keys, so a column missing here fails the
 * typecheck.
 */
const PAYMENT_ROW_COLUMNS: Record<keyof PaymentRow, true> = {
  id: true,
  public_id: true,
  merchant_id: true,
  idempotency_key: true,
  acquirer_key: true,
  amount_minor: true,
  currency: true,
  card_token: true,
  capture: true,
  status: true,
  decline_reason: true,
  failure: true,
  step: true,
  intent: true,
  attempts: true,
  next_attempt_at: true,
  lease_owner: true,
  lease_expires_at: true,
  lease_version: true,
  idem_generation: true,
  acquirer_authorization_id: true,
  hold_transaction_id: true,
  capture_amount_minor: true,
  capture_transaction_id: true,
  captured_minor: true,
  refunded_minor: true,
  started_at: true,
  created_at: true,
  updated_at: true,
  finished_at: true,
};
const PAYMENT_COLUMNS = Object.keys(PAYMENT_ROW_COLUMNS).join(", ");
/** The same, qualified by the lease queue's alias `t`. */
const PAYMENT_COLUMNS_OF_T = Object.keys(PAYMENT_ROW_COLUMNS)
  .map((column) => `t.${column}`)
  .join(", ");

/** The payment a row holds. */
export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    publicId: row.public_id,
    merchantId: row.merchant_id,
    idempotencyKey: row.idempotency_key,
    acquirerKey: row.acquirer_key,
    amountMinor: row.amount_minor,
    currency: row.currency,
    cardToken: row.card_token,
    capture: row.capture,
    status: row.status,
    declineReason: row.decline_reason,
    failure: row.failure,
    step: row.step,
    intent: row.intent,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    leaseVersion: row.lease_version,
    idemGeneration: row.idem_generation,
    authorizationId: row.acquirer_authorization_id,
    holdTransactionId: row.hold_transaction_id,
    captureAmountMinor: row.capture_amount_minor,
    captureTransactionId: row.capture_transaction_id,
    capturedMinor: row.captured_minor,
    refundedMinor: row.refunded_minor,
    startedAt: row.started_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

/** The key sent to the acquirer on every attempt of a payment (PY-06). */
export function acquirerKeyOf(merchantId: string, idempotencyKey: string): string {
  return paymentAcquirerKey(merchantId, idempotencyKey);
}

/** What the API answers (and the idempotency record stores) for a payment. */
export function paymentView(p: Payment): Record<string, unknown> {
  return {
    id: p.publicId,
    status: p.status,
    amountMinor: p.amountMinor.toString(),
    currency: p.currency,
    capture: p.capture,
    capturedMinor: p.capturedMinor.toString(),
    refundedMinor: p.refundedMinor.toString(),
    acquirerAuthorizationId: p.authorizationId,
    declineReason: p.declineReason,
    failure: p.failure,
    createdAt: p.createdAt.toISOString(),
  };
}

/** The merchant's three ledger accounts in `currency`, provisioned on first use (merchant-accounts.ts). */
export async function ensureMerchantAccounts(
  tx: Queryable,
  merchantId: string,
  currency: string,
): Promise<MerchantAccounts> {
  return byName(await provisionMerchantAccounts(tx, merchantId, currency));
}

/**
 * The merchant's accounts in `currency` when all exist (a read, no lock), else undefined: the
 * first payment of a merchant creates them (`ensureMerchantAccounts`, in a transaction).
 */
export async function existingMerchantAccounts(
  q: Queryable,
  merchantId: string,
  currency: string,
): Promise<MerchantAccounts | undefined> {
  const byRole = await merchantAccountsIfComplete(q, merchantId, currency);
  return byRole && byName(byRole);
}

function byName(byRole: AccountsByRole): MerchantAccounts {
  return {
    customerFunds: byRole.customer_funds,
    merchantPending: byRole.merchant_pending,
    merchantAvailable: byRole.merchant_available,
  };
}

/** `n` new payment ids from the table's sequence (a refused insert leaves gaps, as a rollback does). */
export async function drawPaymentIds(q: Queryable, n: number): Promise<bigint[]> {
  const { rows } = await q.query<{ id: bigint }>(
    "SELECT nextval(pg_get_serial_sequence('payments', 'id')) AS id FROM generate_series(1, $1::int4)",
    [n],
  );
  return rows.map((r) => r.id);
}

/**
 * Creates the payment, its saga (step "authorize", due now) and the reserve step — a pending
 * ledger hold — inside `tx` (PY-05 step 1): the hold and the row in ONE statement
 * (`createPaymentsStatement`), so the merchant's balance rows the hold locks are held for that
 * answer and the COMMIT. Throws on a duplicate (merchant, key): the idempotency layer in front
 * must make that impossible. `booked`: the hold was already booked (the upgrade test books it
 * through an older schema's ledger_write). The group of new payments composes
 * `createPaymentsStatement` into a statement of its own (payment-create-group.ts).
 */
export async function createPayment(
  tx: Queryable,
  input: CreatePaymentInput,
  booked?: { holdTransactionId: bigint },
): Promise<Payment> {
  const [id] = await drawPaymentIds(tx, 1);
  const created = [{ id: id!, input }];
  let rows: PaymentRow[];
  if (booked !== undefined) {
    ({ rows } = await tx.query<PaymentRow>(insertPaymentsSql(0, "($13::int8[])[u.ord]"), [
      ...paymentValues(created),
      [booked.holdTransactionId],
    ]));
  } else {
    const accounts = await ensureMerchantAccounts(tx, input.merchantId, input.currency);
    const statement = createPaymentsStatement([{ id: id!, input, accounts }]);
    ({ rows } = await tx.query<PaymentRow>(statement.text, statement.params).catch((err: unknown) => {
      throw ledgerWriteError(err);
    }));
  }
  return toPayment(rows[0]!);
}

/** A new payment as `createPaymentsStatement` writes it: its id (drawn), its input, its merchant's accounts. */
export interface NewPayment {
  id: bigint;
  input: CreatePaymentInput;
  accounts: MerchantAccounts;
}

/**
 * New payments' holds — one atomic `ledger_write` batch — and rows as ONE statement (`WITH hold AS
 * (…) INSERT … RETURNING`), its parameters `$1…$params.length`. `compose`, for a caller that makes
 * it part of a larger statement, gets the number of parameters before its own and gives more CTEs
 * before the hold (`ctes`, ending with a comma), a condition every hold passes through
 * (`holdGuard`, a `WHERE` clause — which must raise to refuse, since a filtered-out hold would
 * still leave the other CTEs' writes) and its parameters.
 */
export function createPaymentsStatement(
  payments: readonly NewPayment[],
  compose?: (offset: number) => { ctes: string; holdGuard: string; params: unknown[] },
): { text: string; params: unknown[] } {
  const hold = ledgerWriteStatement(
    payments.map((p) => ({ transfer: reserveTransfer(p.accounts, p.id, p.input), reversesId: null })),
  );
  const params = [...hold.params, ...paymentValues(payments)];
  const more = compose?.(params.length);
  return {
    text: `WITH ${more?.ctes ?? ""} hold AS (${hold.text} ${more?.holdGuard ?? ""})
       ${insertPaymentsSql(hold.params.length, "hold.transaction_id", "JOIN hold ON hold.ord = u.ord")}`,
    params: more === undefined ? params : [...params, ...more.params],
  };
}

/** The payments RETURNING gave, in `created`'s order. */
export function paymentsOf(created: readonly { id: bigint }[], rows: readonly PaymentRow[]): Payment[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return created.map(({ id }) => toPayment(byId.get(id)!));
}

/** The payment rows' twelve input arrays, in `insertPaymentsSql`'s order. */
function paymentValues(created: readonly { id: bigint; input: CreatePaymentInput }[]): unknown[] {
  const column = <T>(value: (c: { id: bigint; input: CreatePaymentInput }) => T) => created.map(value);
  return [
    column((c) => c.id),
    column((c) => c.input.merchantId),
    column((c) => c.input.idempotencyKey),
    column((c) => acquirerKeyOf(c.input.merchantId, c.input.idempotencyKey)),
    column((c) => c.input.amountMinor),
    column((c) => c.input.currency),
    column((c) => c.input.cardToken),
    column((c) => c.input.capture),
    column((c) => new Date(c.input.nowMs)),
    column((c) => c.input.leaseOwner ?? null),
    column(({ input }) =>
      input.leaseOwner === undefined ? null : new Date(input.nowMs + (input.leaseMs ?? 0)),
    ),
    column((c) => c.input.idemGeneration),
  ];
}

/**
 * The payment rows' INSERT: their twelve input arrays at `$offset+1…` (`paymentValues`), one row
 * per element (`u`, numbered `u.ord` from 1), the hold's id from `hold` (an expression over `u`,
 * or a CTE's column with `join` joining it).
 */
function insertPaymentsSql(offset: number, hold: string, join = ""): string {
  const types = [
    "int8",
    "text",
    "text",
    "text",
    "int8",
    "text",
    "text",
    "boolean",
    "timestamptz",
    "text",
    "timestamptz",
    "int4",
  ];
  const arrays = types.map((type, k) => `$${offset + k + 1}::${type}[]`).join(", ");
  return `INSERT INTO payments (id, merchant_id, idempotency_key, acquirer_key, amount_minor, currency, card_token,
       capture, status, step, intent, next_attempt_at, lease_owner, lease_expires_at, idem_generation,
       hold_transaction_id, started_at, created_at, updated_at)
     OVERRIDING SYSTEM VALUE
     SELECT u.id, u.merchant_id, u.idempotency_key, u.acquirer_key, u.amount_minor, u.currency, u.card_token,
       u.capture, 'pending', 'authorize', 'authorize', u.now, u.lease_owner, u.lease_expires_at, u.idem_generation,
       ${hold}, u.now, u.now, u.now
       FROM unnest(${arrays}) WITH ORDINALITY AS u(id, merchant_id, idempotency_key, acquirer_key, amount_minor,
         currency, card_token, capture, now, lease_owner, lease_expires_at, idem_generation, ord) ${join}
     RETURNING ${PAYMENT_COLUMNS}`;
}

/** The reserve step's pending hold for payment `id`: customer funds → merchant pending. */
function reserveTransfer(accounts: MerchantAccounts, id: bigint, input: CreatePaymentInput) {
  return normalizeTransfer({
    idemKey: `pay:${id}:reserve`,
    from: accounts.customerFunds,
    to: accounts.merchantPending,
    amount: input.amountMinor,
    currency: input.currency,
    pending: true,
    metadata: { paymentId: id.toString() },
  });
}

/** A payment by its internal id, scoped to its merchant. */
export async function findPayment(
  q: Queryable,
  merchantId: string,
  id: bigint,
): Promise<Payment | undefined> {
  const { rows } = await q.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND merchant_id = $2`,
    [id, merchantId],
  );
  return rows[0] === undefined ? undefined : toPayment(rows[0]);
}

/** A payment by the id the API shows (domain/public-ids.ts), scoped to its merchant: another's reads as absent. */
export async function findPaymentByPublicId(
  q: Queryable,
  merchantId: string,
  publicId: string,
): Promise<Payment | undefined> {
  const { rows } = await q.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE public_id = $1 AND merchant_id = $2`,
    [publicId, merchantId],
  );
  return rows[0] === undefined ? undefined : toPayment(rows[0]);
}

export async function findPaymentByKey(
  q: Queryable,
  merchantId: string,
  idempotencyKey: string,
): Promise<Payment | undefined> {
  const { rows } = await q.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`,
    [merchantId, idempotencyKey],
  );
  return rows[0] === undefined ? undefined : toPayment(rows[0]);
}

/** Records the idempotency record's new generation after a retry took the key over. */
export async function setIdemGeneration(q: Queryable, paymentId: bigint, generation: number): Promise<void> {
  await q.query("UPDATE payments SET idem_generation = $2 WHERE id = $1", [paymentId, generation]);
}

/** The Idempotency-Key generation a payment's saga writes under now (a takeover bumps it); undefined: no such payment. */
export async function idemGenerationOf(q: Queryable, paymentId: bigint): Promise<number | undefined> {
  const { rows } = await q.query<{ idem_generation: number }>(
    "SELECT idem_generation FROM payments WHERE id = $1",
    [paymentId],
  );
  return rows[0]?.idem_generation;
}

export interface ClaimOptions {
  owner: string;
  nowMs: number;
  /** How long the claim holds; the orchestrator renews it while a step runs. */
  leaseMs: number;
  maxBatch: number;
  /** Also claim `owner`'s own stranded sagas (see claimDue); undefined: honour every live lease. */
  reclaimOwn?: ReclaimOwn;
}

/**
 * Which of its own live leases an owner takes back: those it granted itself up to
 * `leasedUpToMs` (lease_expires_at ≤ leasedUpToMs + leaseMs) on sagas none of its drives holds now.
 */
export interface ReclaimOwn {
  /** The sagas the owner is driving right now: never taken back. */
  exceptIds: readonly bigint[];
  /** Leases granted after this instant are spared (a saga the API just created, its drive about to start). */
  leasedUpToMs: number;
}

/** Shortest saga or refund lease: an acquirer call and its commit must fit (the workers check the real bound). */
export const MIN_LEASE_MS = 1_000;

/**
 * The payments table as a leased claim queue (infra lease-queue.ts): the lease mechanics are
 * the queue's; the saga's rule is that an unfinished saga is claimable.
 */
export const sagaQueue = new LeaseQueue<PaymentRow, bigint>({
  table: "payments",
  idType: "int8",
  claimable: "t.step <> 'done'",
  order: "t.next_attempt_at",
  returning: PAYMENT_COLUMNS_OF_T,
  minLeaseMs: MIN_LEASE_MS,
});

function claimedOf(c: Claimed<PaymentRow, bigint>): ClaimedPayment {
  // Taken from anyone, this owner included: an authorize call of the old claim may have gone out.
  return { ...toPayment(c.row), takenOver: c.previousOwner !== null };
}

/**
 * Claims up to `maxBatch` due sagas for `owner`: unfinished, due, and unleased or with an expired
 * lease. SKIP LOCKED makes concurrent claimers take disjoint rows without waiting; the version
 * bump fences any write of a previous owner that is still running.
 *
 * `reclaimOwn`: sagas still leased to `owner` that it is not driving (`exceptIds`) are claimed
 * again at once, with a new version fencing the old claim: a database failure left them leased
 * (a step's commit failed, or a claim committed but its answer was lost), and waiting out the
 * lease would hold them for `leaseMs` after the database came back. Such a saga comes back
 * `takenOver` like any other, so a pending authorization is asked about by key first (PY-06).
 */
export async function claimDue(q: Queryable, options: ClaimOptions): Promise<ClaimedPayment[]> {
  const claimed = await sagaQueue.claim(q, {
    owner: options.owner,
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    limit: options.maxBatch,
    ...(options.reclaimOwn === undefined ? {} : { reclaimOwn: options.reclaimOwn }),
  });
  return claimed.map(claimedOf);
}

/**
 * Claims one payment by id for `owner` when it is unleased, its lease expired, or `owner` holds it
 * (a retry's or a capture's inline drive). `takenOver` whenever it was leased, to this owner too:
 * the API's own drive of a new payment starts from createPayment's lease without claiming, so a
 * saga found leased here was stranded, or is being driven by a claim this one now fences — either
 * way an authorize call may be out, and the status query must come first (PY-06).
 */
export async function claimPayment(
  q: Queryable,
  id: bigint,
  options: Omit<ClaimOptions, "maxBatch">,
): Promise<ClaimedPayment | undefined> {
  const claimed = await sagaQueue.claimById(q, id, {
    owner: options.owner,
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    orOwn: true,
  });
  return claimed === undefined ? undefined : claimedOf(claimed);
}

/** Extends a saga's live lease (same version and owner) while its step runs; false when it was lost. */
export async function renewSagaLease(
  q: Queryable,
  lease: Lease<bigint>,
  options: { nowMs: number; leaseMs: number },
): Promise<boolean> {
  return (await sagaQueue.renew(q, lease, options)) !== undefined;
}

export interface ApplyDecisionOptions {
  owner: string;
  nowMs: number;
  leaseMs: number;
  idempotency: IdempotencyStore;
  /** A finished saga's event, written in the step's transaction (PY-11's outbox). */
  emitFinished?: (tx: Queryable, payment: Payment) => Promise<void>;
}

/**
 * Commits one saga step inside `tx`: the new saga state (the queue's fenced write on version and
 * owner, else PAYMENTS_SAGA_LEASE_LOST), the ledger action, and the idempotency record —
 * `complete` with the final response when the original POST's saga finishes, `advance` (a lease
 * renewal) otherwise. Keeps the claim when the next step is due now, releases it when it waits.
 *
 * Two rows every payment of a merchant needs are locked last, each until COMMIT (issue 14): the
 * merchant's balance rows (the ledger action: a whole post or a void, one call, ledger_settle) and
 * then its outbox stream row (the finished saga's event, PY-11's per-account counter). So the step's
 * other writes run before either is held, and the stream row — the hotter, which the relay's
 * acknowledgements lock too — is never held while this step waits for the balance rows. A partial
 * capture's post names its new ledger transaction in the payment's response, so it goes first.
 */
export async function applyDecision(
  tx: Queryable,
  payment: Payment,
  next: SagaDecision,
  options: ApplyDecisionOptions,
): Promise<Payment> {
  const [write] = await writeSagaStates(tx, [{ payment, next }], options);
  if (!write!.won) {
    throw paymentErrors.create("PAYMENTS_SAGA_LEASE_LOST", { fields: { paymentId: payment.id.toString() } });
  }
  const written = toPayment(write!.row);
  if (
    next.ledger === "post-hold" &&
    captureAmountOf(written.amountMinor, written.captureAmountMinor) !== written.amountMinor
  ) {
    const updated = await applyLedgerAction(tx, written, next);
    await recordIdempotency(tx, updated, next, options);
    if (next.finished) await options.emitFinished?.(tx, updated);
    return updated;
  }
  await recordIdempotency(tx, written, next, options);
  const settled = await applyLedgerAction(tx, written, next);
  if (next.finished) await options.emitFinished?.(tx, settled);
  return settled;
}

/** A saga step to commit: the payment as its lease holder read it, and the decision to persist. */
export interface SagaStepWrite {
  payment: Payment;
  next: SagaDecision;
}

/**
 * The new saga state of each step, ONE statement (the queue's fenced `updateMany`, compare-and-set
 * on lease_version and owner): per step, `{ won: false }` when the lease was lost. The claim is kept
 * and renewed when the next step is due now, released when it waits or the saga finished.
 */
export async function writeSagaStates(
  tx: Queryable,
  steps: readonly SagaStepWrite[],
  options: Pick<ApplyDecisionOptions, "owner" | "nowMs" | "leaseMs">,
): Promise<FencedWrite<PaymentRow>[]> {
  const { leases, write } = sagaStatesWrite(steps, options);
  return sagaQueue.updateMany(tx, leases, write);
}

/**
 * `writeSagaStates` as a statement to compose (a CTE of the step group's one statement), its
 * parameters from `$offset+1`: one payment row per lease still held, none for a lost one.
 */
export function sagaStatesStatement(
  steps: readonly SagaStepWrite[],
  options: Pick<ApplyDecisionOptions, "owner" | "nowMs" | "leaseMs">,
  offset: number,
): { text: string; params: unknown[] } {
  const { leases, write } = sagaStatesWrite(steps, options);
  return sagaQueue.updateManyStatement(leases, write, offset);
}

/** The fenced write of each step's new state; `afterStep` is the same SET, applied in memory. */
function sagaStatesWrite(
  steps: readonly SagaStepWrite[],
  options: Pick<ApplyDecisionOptions, "owner" | "nowMs" | "leaseMs">,
) {
  const { nowMs } = options;
  const column = (name: string, type: string, value: (s: SagaStepWrite) => unknown) => ({
    name,
    type,
    values: steps.map(value),
  });
  const leases = steps.map(({ payment }) => ({
    id: payment.id,
    leaseVersion: payment.leaseVersion,
    owner: options.owner,
    leaseExpiresAtMs: payment.leaseExpiresAt?.getTime() ?? 0,
  }));
  const write = {
    nowMs,
    renewUntilMs: steps.map(({ next }) => (keepsClaim(next) ? nowMs + options.leaseMs : null)),
    columns: [
      column("status", "text", (s) => s.next.status),
      column("step", "text", (s) => s.next.step),
      column("intent", "text", (s) => s.next.intent),
      column("attempts", "int4", (s) => s.next.attempts),
      column("next_attempt_at", "timestamptz", (s) => new Date(nowMs + s.next.delayMs)),
      column("authorization_id", "text", (s) => s.next.authorizationId),
      column("decline_reason", "text", (s) => s.next.declineReason),
      column("failure", "text", (s) => s.next.failure),
      column("capture_minor", "int8", (s) =>
        captureAmountOf(s.payment.amountMinor, s.payment.captureAmountMinor),
      ),
    ],
    set: (p: { now: string }) => `status = i.status, step = i.step, intent = i.intent, attempts = i.attempts,
        next_attempt_at = i.next_attempt_at, acquirer_authorization_id = i.authorization_id,
        decline_reason = COALESCE(i.decline_reason, t.decline_reason), failure = COALESCE(i.failure, t.failure),
        captured_minor = CASE WHEN i.status = 'captured' THEN i.capture_minor ELSE t.captured_minor END,
        updated_at = ${p.now}::timestamptz,
        finished_at = CASE WHEN i.step = 'done' THEN ${p.now}::timestamptz ELSE NULL END`,
  };
  return { leases, write };
}

/** Whether a step's write keeps (and renews) the saga's claim: its next step is due now, so its drive goes on. */
export function keepsClaim(next: SagaDecision): boolean {
  return !next.finished && next.delayMs === 0;
}

/**
 * The payment as `writeSagaStates` writes it when its lease holds, computed before the write:
 * the step group stores the final response and the event of a finished saga in the SAME
 * statement as its state, so it builds them from this. Every column the view reads is either
 * the decision's or one that only the lease holder changes while the lease holds (the fence
 * makes `payment` the row as it is). The lease columns are the queue's (`renewUntilMs` above).
 */
export function afterStep(payment: Payment, next: SagaDecision, nowMs: number, leaseMs: number): Payment {
  const kept = keepsClaim(next);
  return {
    ...payment,
    status: next.status,
    step: next.step,
    intent: next.intent,
    attempts: next.attempts,
    nextAttemptAt: new Date(nowMs + next.delayMs),
    authorizationId: next.authorizationId,
    declineReason: next.declineReason ?? payment.declineReason,
    failure: next.failure ?? payment.failure,
    capturedMinor:
      next.status === "captured"
        ? captureAmountOf(payment.amountMinor, payment.captureAmountMinor)
        : payment.capturedMinor,
    updatedAt: new Date(nowMs),
    finishedAt: next.step === "done" ? new Date(nowMs) : null,
    leaseOwner: kept ? payment.leaseOwner : null,
    leaseExpiresAt: kept ? new Date(nowMs + leaseMs) : null,
    leaseVersion: payment.leaseVersion + 1n,
  };
}

/**
 * The decision's ledger action: post the hold (all of it, or — PY-16 — the captured part with the
 * rest released, ledger-partial-post.ts), or void it. In the step's transaction.
 */
async function applyLedgerAction(tx: Queryable, p: Payment, next: SagaDecision): Promise<Payment> {
  if (next.ledger === "void-hold") await settleHold(tx, p.holdTransactionId, "voided");
  if (next.ledger !== "post-hold") return p;
  const capturedMinor = captureAmountOf(p.amountMinor, p.captureAmountMinor);
  if (capturedMinor === p.amountMinor) {
    await settleHold(tx, p.holdTransactionId, "posted");
    return p;
  }
  const capture = await postPartially(tx, p.holdTransactionId, {
    amountMinor: capturedMinor,
    idemKey: `pay:${p.id}:capture`,
    metadata: { paymentId: p.id.toString() },
  });
  await tx.query("UPDATE payments SET capture_transaction_id = $2 WHERE id = $1", [p.id, capture.id]);
  return { ...p, captureTransactionId: capture.id };
}

/** The response the original POST /v1/payments replays once its saga finished (PY-13). */
export function finalResponse(p: Payment): {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
} {
  return {
    status: 201,
    headers: { "content-type": "application/json; charset=utf-8", location: `/v1/payments/${p.publicId}` },
    body: new TextEncoder().encode(JSON.stringify(paymentView(p))),
  };
}

async function recordIdempotency(
  tx: Queryable,
  p: Payment,
  next: SagaDecision,
  options: ApplyDecisionOptions,
): Promise<void> {
  // Only the POST that created the payment holds an idempotency record; capture/void requests later do not.
  if (next.intent !== "authorize") return;
  const lease: IdempotencyLease = {
    scope: p.merchantId,
    key: p.idempotencyKey,
    generation: p.idemGeneration,
    recoveryPoint: "saga",
  };
  if (next.finished) await options.idempotency.complete(tx, lease, finalResponse(p), options.nowMs);
  else await options.idempotency.advance(tx, lease, `saga_${next.step}`, options.nowMs);
}

/**
 * Moves a finished, authorized saga to its capture or void step (PY-16); the caller holds the row
 * lock. `captureAmountMinor`: a partial capture's amount (< authorized), kept for every try of the step.
 */
export async function scheduleSettlement(
  tx: Queryable,
  p: Payment,
  state: SagaState,
  nowMs: number,
  captureAmountMinor: bigint | null = null,
): Promise<void> {
  const partial = captureAmountMinor !== null && captureAmountMinor < p.amountMinor;
  await tx.query(
    `UPDATE payments SET step = $2, intent = $3, attempts = 0, next_attempt_at = $4, finished_at = NULL,
        updated_at = $4, lease_version = lease_version + 1${partial ? ", capture_amount_minor = $5" : ""} WHERE id = $1`,
    [p.id, state.step, state.intent, new Date(nowMs), ...(partial ? [captureAmountMinor] : [])],
  );
}

/** The payment row (by internal id) locked FOR UPDATE, scoped to its merchant. */
export async function lockPayment(tx: Queryable, merchantId: string, id: bigint): Promise<Payment> {
  const { rows } = await tx.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND merchant_id = $2 FOR UPDATE`,
    [id, merchantId],
  );
  // No id in the problem: the internal one never leaves the service (public-ids.ts).
  if (rows[0] === undefined) throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND");
  return toPayment(rows[0]);
}
