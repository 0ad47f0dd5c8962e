/**
 * Several GroupCommits writing at once ("lanes"): one lane waits for its write doing nothing
 * (a commit's flush, a Redis round trip); two or more overlap their writes. An item joins the
 * lane with the fewest waiting, so order holds within a batch, not across lanes — use it only
 * where items in flight together have no order their callers could know (payments' transfers,
 * flash-sale's reservations). `maxPending` is per lane.
 *
 * @example
 * const lanes = new GroupCommitLanes((batch) => write(batch), { lanes: 2, maxBatch: 128, maxPending: 5_000 });
 * const result = await lanes.submit(item);
 * lanes.stats.batches; // summed over the lanes
 */
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from "./group-commit.ts";

/** Most lanes: each is a write in flight at once. */
export const MAX_GROUP_COMMIT_LANES = 64;

export class GroupCommitLanes<I, O> {
  readonly #lanes: GroupCommit<I, O>[];

  constructor(write: (batch: I[]) => Promise<readonly O[]>, options: GroupCommitOptions & { lanes: number }) {
    const { lanes, ...settings } = options;
    if (!(Number.isInteger(lanes) && lanes >= 1 && lanes <= MAX_GROUP_COMMIT_LANES)) {
      throw new RangeError(`lanes must be an integer in [1, ${MAX_GROUP_COMMIT_LANES}], got ${lanes}`);
    }
    this.#lanes = Array.from({ length: lanes }, () => new GroupCommit<I, O>(write, settings));
  }

  /** Queues `item` on the lane with the fewest waiting; resolves with its own result. */
  submit(item: I): Promise<O> {
    let lane = this.#lanes[0]!;
    for (const other of this.#lanes) if (other.pending < lane.pending) lane = other;
    return lane.submit(item);
  }

  /** Items waiting for a write, all lanes. */
  get pending(): number {
    return this.#lanes.reduce((sum, lane) => sum + lane.pending, 0);
  }

  /** Counters summed over the lanes. */
  get stats(): GroupCommitStats {
    const sum = { batches: 0, items: 0, refused: 0 };
    for (const lane of this.#lanes) {
      const stats = lane.stats;
      sum.batches += stats.batches;
      sum.items += stats.items;
      sum.refused += stats.refused;
    }
    return sum;
  }

  /** Resolves once everything submitted so far is written (or failed), every lane. */
  async drain(): Promise<void> {
    await Promise.all(this.#lanes.map((lane) => lane.drain()));
  }
}
