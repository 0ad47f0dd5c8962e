/**
 * Group commit for single transfers (issue 14), on kit's GroupCommit: concurrent `transfer`
 * calls of one process are gathered — the first of an idle moment waits up to `maxWaitMs` for
 * company, those arriving while a group is being written go together in the next — and each
 * group is ONE database transaction (ledger-group-write.ts), every transfer keeping its own
 * outcome. A hot account then costs one balance-row update and one commit per group, not per
 * transfer.
 *
 * Bounded: at most `maxPending` transfers wait; past it `submit` refuses at once with
 * GROUP_COMMIT_QUEUE_FULL (503 over HTTP), never an unbounded wait.
 *
 * @example
 * const group = new TransferGroupCommit(db, { maxWaitMs: 1 });
 * const outcome = await group.submit(normalizeTransfer(request));
 * const { transaction, replayed } = transferResultOf(outcome, request.idemKey); // or a typed error
 */
import type { Database } from "@casebook/infra/sql/sql";
import { GroupCommit, type GroupCommitStats } from "@casebook/kit/group-commit";
import type { Transfer } from "../domain/ledger.ts";
import { ledgerErrors } from "../domain/ledger-errors.ts";
import { type GroupItem, type TransferOutcome, writeTransferGroup } from "./ledger-group-write.ts";
import type { TransferResult } from "./ledger-write.ts";

export interface TransferGroupCommitOptions {
  /** Transfers in one database transaction. Default 1 000. */
  maxBatch?: number;
  /** Transfers waiting at once (the group being written not counted). Default 10 000. */
  maxPending?: number;
  /** Longest the first transfer of an idle moment waits for company, in ms. Default 1. */
  maxWaitMs?: number;
}

export const GROUP_COMMIT_DEFAULTS = { maxBatch: 1_000, maxPending: 10_000, maxWaitMs: 1 } as const;

export class TransferGroupCommit {
  readonly #group: GroupCommit<GroupItem, TransferOutcome>;

  constructor(db: Database, options: TransferGroupCommitOptions = {}) {
    const settings = { ...GROUP_COMMIT_DEFAULTS, ...options };
    this.#group = new GroupCommit((items) => writeTransferGroup(db, items), settings);
  }

  /** Queues one validated transfer; resolves with its own outcome (rejects only when its group could not be written). */
  submit(transfer: Transfer): Promise<TransferOutcome> {
    return this.#group.submit({ transfer });
  }

  /** Transfers waiting for a group. */
  get pending(): number {
    return this.#group.pending;
  }

  get stats(): GroupCommitStats {
    return this.#group.stats;
  }

  /** Resolves once everything submitted so far is written (or failed). */
  drain(): Promise<void> {
    return this.#group.drain();
  }
}

/**
 * A single transfer's outcome as `LedgerRepository.transfer` has always answered it: the
 * transaction (`replayed` for `exists`), or the typed error of its failure.
 */
export function transferResultOf(outcome: TransferOutcome, idemKey: string): TransferResult {
  switch (outcome.code) {
    case "ok":
      return { transaction: outcome.transaction!, replayed: false };
    case "exists":
      return { transaction: outcome.transaction!, replayed: true };
    case "exists_with_different_entries":
    case "exists_with_different_metadata":
    case "exists_with_different_flags": {
      const fields = { idemKey, transactionId: outcome.transaction?.id.toString(), result: outcome.code };
      throw ledgerErrors.create("LEDGER_IDEMPOTENCY_CONFLICT", { fields });
    }
    case "account_not_found":
      throw ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", {
        fields: { accountId: outcome.accountId.toString() },
      });
    case "currency_mismatch":
      throw ledgerErrors.create("LEDGER_CURRENCY_MISMATCH", {
        fields: {
          accountId: outcome.accountId.toString(),
          accountCurrency: outcome.accountCurrency,
          entryCurrency: outcome.entryCurrency,
        },
      });
    case "exceeds_credits":
      throw ledgerErrors.create("LEDGER_INSUFFICIENT_FUNDS", {
        fields: { accountIds: outcome.accountIds.map(String) },
      });
    case "write_failed":
      throw outcome.error;
    default:
      // linked_* cannot happen to a lone transfer; a new code must be mapped here first.
      throw new Error(`transfer ${idemKey}: unexpected outcome ${outcome.code}`);
  }
}
