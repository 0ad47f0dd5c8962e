/**
 * Commit offsets for big channels (CH-07, CH-08). A channel's messages carry Snowflake ids
 * (no counter row to fight over at send), but Snowflakes from two nodes with skewed clocks
 * come out of real order: a message written later can carry a smaller id, so a reader that
 * resumes "after id X" skips it forever. Readers therefore resume after a commit offset:
 * a number given to a message only after its row committed, by a stamp that takes the
 * channel row's lock and numbers every committed, unnumbered row at once. Stamps of one
 * channel run one after another, so the offsets that readers can see are always 1..K with
 * no hole, and a row committed late gets an offset above every one already visible.
 *
 * The hot row is touched once per stamp, not once per message: senders waiting at the same
 * moment share one stamp (kit's GroupCommit), so the lock is taken as often as the batch
 * size allows. A send that crashed between its insert and its stamp leaves a row that the
 * next stamp (anyone's, or the sweeper's) numbers.
 *
 * @example
 * const offsets = new CommitOffsets(history, { maxBatch: 1_000, maxPending: 10_000 });
 * const { message } = await history.append(newMessage);            // seq undefined in a channel
 * const seq = await offsets.offsetOf(message.chatId, message.id);  // its commit offset
 */
import { assert } from "@casebook/kit/assert";
import { GroupCommit } from "@casebook/kit/group-commit";

/** What stamping needs from the history. */
export interface StampPort {
  stampChannel(chatId: bigint, maxBatch: number): Promise<Map<bigint, bigint>>;
  seqOf(chatId: bigint, id: bigint): Promise<bigint | undefined>;
}

export interface CommitOffsetsOptions {
  /** Rows numbered by one stamp transaction. */
  maxBatch: number;
  /** Senders waiting for a stamp at once; more are refused (GROUP_COMMIT_QUEUE_FULL). */
  maxPending: number;
}

interface Pending {
  readonly chatId: bigint;
  readonly id: bigint;
}

/** Stamps per channel and request at most: a channel with more unnumbered rows than this × maxBatch waits for the next round. */
const MAX_STAMPS_PER_WRITE = 64;

export class CommitOffsets {
  readonly #port: StampPort;
  readonly #maxBatch: number;
  readonly #commit: GroupCommit<Pending, bigint>;

  constructor(port: StampPort, options: CommitOffsetsOptions) {
    this.#port = port;
    this.#maxBatch = options.maxBatch;
    this.#commit = new GroupCommit((items) => this.#write(items), {
      maxBatch: options.maxBatch,
      maxPending: options.maxPending,
    });
  }

  /** The commit offset of a committed channel message, stamping it (with its neighbours) if needed. */
  offsetOf(chatId: bigint, id: bigint): Promise<bigint> {
    return this.#commit.submit({ chatId, id });
  }

  /** Waits for every stamp in flight (shutdown). */
  drain(): Promise<void> {
    return this.#commit.drain();
  }

  async #write(items: readonly Pending[]): Promise<bigint[]> {
    const chats = new Map<bigint, Set<bigint>>();
    for (const item of items) {
      const ids = chats.get(item.chatId) ?? new Set<bigint>();
      ids.add(item.id);
      chats.set(item.chatId, ids);
    }
    const found = new Map<string, bigint>();
    for (const [chatId, ids] of chats) {
      let missing = ids.size;
      for (let round = 0; round < MAX_STAMPS_PER_WRITE && missing > 0; round++) {
        const stamped = await this.#port.stampChannel(chatId, this.#maxBatch);
        if (stamped.size === 0) break;
        for (const [id, seq] of stamped) {
          if (ids.has(id)) {
            found.set(`${chatId}:${id}`, seq);
            missing--;
          }
        }
      }
    }
    const seqs: bigint[] = [];
    for (const item of items) {
      // Numbered by another stamper (a sweeper, another process) before ours ran.
      const seq = found.get(`${item.chatId}:${item.id}`) ?? (await this.#port.seqOf(item.chatId, item.id));
      assert(seq !== undefined, "a committed channel row is numbered by the stamp that follows its commit");
      seqs.push(seq);
    }
    return seqs;
  }
}
