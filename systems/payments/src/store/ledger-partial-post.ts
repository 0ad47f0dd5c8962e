/**
 * Posting part of a pending hold (PY-16, Stripe's `amount_to_capture`), after TigerBeetle's
 * post_pending_transfer with a smaller amount: the posted part moves, the remainder is released,
 * in ONE database transaction. Entries are append-only and a hold's entries carry its full
 * amount, so the hold itself cannot be shrunk; instead, inside the caller's transaction:
 *
 *   1. the hold is voided (its pending amounts are released, entries untouched);
 *   2. a NEW posted transfer of `amountMinor` between the hold's two accounts is written
 *      (`idemKey`, metadata `pendingId` = the hold), the transaction later refunds reverse.
 *
 * Balances end exactly where a partial post_pending leaves them: posted += captured, pending
 * −= authorized. Idempotent: a retried call finds the hold already voided (a no-op) and the
 * transfer's key already written (a replay), and returns the same transaction.
 *
 * @example
 * const capture = await db.transaction((tx) =>
 *   postPartially(tx, holdId, { amountMinor: 3_000n, idemKey: "pay:7:capture", metadata: { paymentId: "7" } }));
 * capture.id; // the posted transaction refunds of payment 7 reverse
 */
import { strict as assert } from "node:assert";
import type { Queryable } from "@casebook/infra/sql/sql";
import { legsByAccount, type Metadata, normalizeTransfer } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";
import { applyTransfers, type LedgerTransaction, loadTransactions, settleHold } from "./ledger-repository.ts";

export interface PartialPostRequest {
  /** The part to post, in minor units: 0 < amountMinor < the hold's amount (all of it: post the hold). */
  amountMinor: bigint;
  /** The new posted transfer's key: the retry handle that makes a repeat a replay. */
  idemKey: string;
  metadata?: Metadata;
}

/** The hold's one debited and one credited account: a payment hold moves money between two accounts. */
function twoLegs(hold: LedgerTransaction): { from: bigint; to: bigint; currency: string; amount: bigint } {
  const legs = legsByAccount(hold.entries);
  const from = legs.find((leg) => leg.debits > 0n && leg.credits === 0n);
  const to = legs.find((leg) => leg.credits > 0n && leg.debits === 0n);
  if (legs.length !== 2 || from === undefined || to === undefined) {
    const reason = "only a two-account hold can be posted in part";
    throw ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields: { field: "holdId", reason } });
  }
  assert(from.debits === to.credits, "a balanced two-leg hold debits what it credits");
  return { from: from.accountId, to: to.accountId, currency: from.currency, amount: from.debits };
}

/**
 * Posts `amountMinor` of pending hold `holdId` and releases the rest, inside `tx` (see the module
 * comment). LEDGER_TRANSFER_INVALID when the amount is not strictly inside (0, hold amount);
 * LEDGER_TRANSACTION_NOT_PENDING when the hold was already posted in full; LEDGER_PENDING_EXPIRED
 * past the hold's timeout (016).
 */
export async function postPartially(
  tx: Queryable,
  holdId: bigint,
  request: PartialPostRequest,
): Promise<LedgerTransaction> {
  // The hold row is locked first, then (settleHold, applyTransfers) the accounts: the ledger's one lock order.
  const { rows } = await tx.query<{ status: string; expired: boolean }>(
    "SELECT status, coalesce(expires_at <= now(), false) AS expired FROM transactions WHERE id = $1 FOR NO KEY UPDATE",
    [holdId],
  );
  const status = rows[0]?.status;
  if (status === undefined)
    throw ledgerErrors.create("LEDGER_TRANSACTION_NOT_FOUND", { fields: { id: holdId.toString() } });
  if (status !== "pending") {
    // Voided by an earlier run of this very call is a replay; posted, or voided by a void, is not ours to post.
    const done = await tx.query<{ id: bigint }>("SELECT id FROM transactions WHERE idem_key = $1", [
      request.idemKey,
    ]);
    if (status === "voided" && done.rows[0] !== undefined) {
      const [replayed] = await loadTransactions(tx, [done.rows[0].id]);
      return replayed!;
    }
    throw ledgerErrors.create("LEDGER_TRANSACTION_NOT_PENDING", {
      fields: { id: holdId.toString(), status, outcome: "posted in part" },
    });
  }
  const [hold] = await loadTransactions(tx, [holdId]);
  if (rows[0]!.expired) {
    const fields = { id: holdId.toString(), expiresAt: hold!.expiresAt?.toISOString() };
    throw ledgerErrors.create("LEDGER_PENDING_EXPIRED", { fields });
  }
  const legs = twoLegs(hold!);
  if (request.amountMinor <= 0n || request.amountMinor >= legs.amount) {
    const reason = `a partial post takes 1..${legs.amount - 1n} of this hold (all of it: post the hold)`;
    throw ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields: { field: "amountMinor", reason } });
  }
  await settleHold(tx, holdId, "voided");
  const transfer = normalizeTransfer({
    idemKey: request.idemKey,
    from: legs.from,
    to: legs.to,
    amount: request.amountMinor,
    currency: legs.currency,
    metadata: { ...request.metadata, pendingId: holdId.toString(), postedOfPendingMinor: `${legs.amount}` },
  });
  const [posted] = await applyTransfers(tx, [{ transfer, reversesId: null }]);
  return posted!.transaction;
}
