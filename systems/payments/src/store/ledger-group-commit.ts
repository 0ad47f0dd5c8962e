/**
 * Group commit for single transfers (issue 14), on kit's GroupCommit: concurrent `transfer`
 * calls of one process are gathered — the first of an idle moment waits up to `maxWaitMs` for
 * company, those arriving while a group is being written go together in the next — and each
 * group is ONE database transaction (ledger-group-write.ts), every transfer keeping its own
 * outcome. A hot account then costs one balance-row update and one commit per group, not per
 * transfer.
 *
 * `lanes` groups are written at once (each lane a kit GroupCommit: its own transaction, on its
 * own connection), so one group's commit can overlap the next group's work. A transfer joins a
 * lane that is not writing now — the one with the most already waiting — so arrivals fill ONE
 * next group; only when every lane is writing (or full) does it join the one with the fewest
 * waiting. So a second lane writes only what arrived while the first was writing (or stuck
 * behind a lock): in a closed loop every caller waits in the same group, and groups stay as
 * large as the load makes them. (Dealing every arrival to the lane with the fewest waiting, kit's
 * GroupCommitLanes rule, split the callers a finished group released between the lane about to
 * write and the one still writing: at 16 clients the groups shrank to 4; spreading them over
 * idle lanes gave 8 and 8. Each group costs a statement, a commit and a round trip on both
 * sides — ~1 ms of CPU here under load — so at 16 clients groups of 16 took 300 µs of CPU
 * (Node + PostgreSQL) per transfer where groups of 8 took 450–540, measured back to back.)
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
import { GroupCommit, type GroupCommitStats } from "@casebook/kit/group-commit";
import { MAX_GROUP_COMMIT_LANES } from "@casebook/kit/group-commit-lanes";
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
}

export const GROUP_COMMIT_DEFAULTS = { maxBatch: 1_000, maxPending: 10_000, maxWaitMs: 1, lanes: 2 } as const;

/** One lane: a group commit, and whether its write is in flight. */
interface Lane {
  readonly group: GroupCommit<GroupItem, TransferOutcome>;
  writing: boolean;
}

export class TransferGroupCommit {
  readonly #lanes: Lane[];
  readonly #maxPending: number;

  constructor(db: Database, options: TransferGroupCommitOptions = {}) {
    const { lanes, ...settings } = { ...GROUP_COMMIT_DEFAULTS, ...options };
    this.#maxPending = settings.maxPending;
    if (!(Number.isInteger(lanes) && lanes >= 1 && lanes <= MAX_GROUP_COMMIT_LANES)) {
      throw new RangeError(`lanes must be an integer in [1, ${MAX_GROUP_COMMIT_LANES}], got ${lanes}`);
    }
    this.#lanes = Array.from({ length: lanes }, () => {
      const lane: Lane = {
        writing: false,
        group: new GroupCommit<GroupItem, TransferOutcome>(async (items) => {
          lane.writing = true;
          try {
            return await writeTransferGroup(db, items);
          } finally {
            lane.writing = false;
          }
        }, settings),
      };
      return lane;
    });
  }

  /**
   * Queues one validated transfer (see the module comment for the lane it joins); resolves with
   * its own outcome (rejects only when its group could not be written at all: SQL_UNAVAILABLE).
   */
  submit(transfer: Transfer): Promise<TransferOutcome> {
    let filling: Lane | undefined;
    let shortest = this.#lanes[0]!;
    for (const lane of this.#lanes) {
      const room = lane.group.pending < this.#maxPending;
      if (!lane.writing && room && (filling === undefined || lane.group.pending > filling.group.pending))
        filling = lane;
      if (lane.group.pending < shortest.group.pending) shortest = lane;
    }
    return (filling ?? shortest).group.submit({ transfer });
  }

  /** Transfers waiting for a group, all lanes. */
  get pending(): number {
    return this.#lanes.reduce((sum, lane) => sum + lane.group.pending, 0);
  }

  /** Counters summed over the lanes. */
  get stats(): GroupCommitStats {
    const sum = { batches: 0, items: 0, refused: 0 };
    for (const { group } of this.#lanes) {
      const stats = group.stats;
      sum.batches += stats.batches;
      sum.items += stats.items;
      sum.refused += stats.refused;
    }
    return sum;
  }

  /** Resolves once everything submitted so far is written (or failed), every lane. */
  async drain(): Promise<void> {
    await Promise.all(this.#lanes.map((lane) => lane.group.drain()));
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
