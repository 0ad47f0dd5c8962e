/**
 * Group commit for single transfers (issue 14), on kit's GroupCommit: concurrent `transfer`
 * calls of one process are gathered — the first of an idle moment waits up to `maxWaitMs` for
 * as much company as the lane's last group had, those arriving while a group is being written
 * go together in the next — and each group is ONE database transaction (ledger-group-write.ts),
 * every transfer keeping its own outcome. A hot account then costs one balance-row update and
 * one commit per group, not per transfer.
 *
 * `lanes` groups are written at once (kit's GroupCommitLanes: each lane its own transaction, on
 * its own connection), so one group's commit can overlap the next group's work. A transfer joins
 * the lane kit's rule picks: one that is not writing now, the one with the most already waiting,
 * so arrivals fill ONE next group and a second lane writes only what arrived while the first was
 * writing (or stuck behind a lock); in a closed loop every caller waits in the same group, and
 * groups stay as large as the load makes them. (The rule was born here, issue 14's CPU work: at
 * 16 clients the fewest-waiting rule shrank groups to 4, 0.25 commits per transfer, against
 * 0.064 with this one; each group costs a statement, a commit and a round trip on both sides.)
 * Arrival order is kept within a group — which is what "one by one" means for transfers that
 * were in flight together (their callers could not have known an order).
 *
 * Bounded: at most `maxPending` transfers wait per lane; past it `submit` refuses at once with
 * GROUP_COMMIT_QUEUE_FULL (503 over HTTP), never an unbounded wait.
 *
 * @example
 * const group = new TransferGroupCommit(db, { maxWaitMs: 1 });
 * const outcome = await group.submit(normalizeTransfer(request));
 * const { transaction, replayed } = transferResultOf(outcome, request.idemKey); // or a typed error
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { GroupCommitOptions, GroupCommitStats } from "@casebook/kit/group-commit";
import { GroupCommitLanes } from "@casebook/kit/group-commit-lanes";
import type { Transfer } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";
import { type GroupItem, type TransferOutcome, writeTransferGroup } from "./ledger-group-write.ts";
import type { TransferResult } from "./ledger-write.ts";

export interface TransferGroupCommitOptions {
  /** Transfers in one database transaction. Default 1 000. */
  maxBatch?: number;
  /** Transfers waiting at once (the group being written not counted). Default 10 000. */
  maxPending?: number;
  /** Longest the first transfer of an idle moment waits for company, in ms. Default 1. */
  maxWaitMs?: number;
  /**
   * Groups written at once, each on its own connection (the pool needs at least this many).
   * One lane waits for its commit's flush doing nothing; two or more overlap their flushes
   * (PostgreSQL flushes concurrent commits together). `maxPending` is per lane. Default 2.
   */
  lanes?: number;
  /**
   * What a group started from idle waits for, `maxWaitMs` at most (kit's GroupCommit `fillTo`).
   * Default "last-batch": as many transfers as the lane's last group — the callers it released,
   * back with their next transfer — not `maxBatch`, which a closed loop of N callers never
   * reaches, so every round waited out `maxWaitMs` (at 8 clients: 2,023–2,159 → 3,833–3,913
   * transfers/s, p50 3.5 → 1.8 ms; README, Bench).
   */
  fillTo?: GroupCommitOptions["fillTo"];
}

export const GROUP_COMMIT_DEFAULTS = {
  maxBatch: 1_000,
  maxPending: 10_000,
  maxWaitMs: 1,
  lanes: 2,
  fillTo: "last-batch",
} as const;

export class TransferGroupCommit {
  readonly #lanes: GroupCommitLanes<GroupItem, TransferOutcome>;

  constructor(db: Database, options: TransferGroupCommitOptions = {}) {
    this.#lanes = new GroupCommitLanes((items) => writeTransferGroup(db, items), {
      ...GROUP_COMMIT_DEFAULTS,
      ...options,
    });
  }

  /**
   * Queues one validated transfer (see the module comment for the lane it joins); resolves with
   * its own outcome (rejects only when its group could not be written at all: SQL_UNAVAILABLE).
   */
  submit(transfer: Transfer): Promise<TransferOutcome> {
    return this.#lanes.submit({ transfer });
  }

  /** Transfers waiting for a group, all lanes. */
  get pending(): number {
    return this.#lanes.pending;
  }

  /** Counters summed over the lanes. */
  get stats(): GroupCommitStats {
    return this.#lanes.stats;
  }

  /** Resolves once everything submitted so far is written (or failed), every lane. */
  async drain(): Promise<void> {
    await this.#lanes.drain();
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
    case "exists_with_different_flags":
    case "exists_with_different_timeout": {
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
