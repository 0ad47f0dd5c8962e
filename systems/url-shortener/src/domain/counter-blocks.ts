/**
 * Numbers handed out in blocks (US-05, US-11): a writer reserves `blockSize` numbers with ONE
 * atomic add on a shared counter (`CounterPort.reserve`: PostgreSQL `UPDATE … SET value =
 * value + n RETURNING value`, or Redis `INCRBY`), then hands them out locally, one by one,
 * with no I/O. The counter is called once per block, so 1,000 links cost one round trip, and
 * no per-link auto-increment is a global bottleneck.
 *
 * Each add returns a distinct end, so two writers' blocks never overlap: uniqueness comes
 * from construction, and nothing on the write path checks for a collision. A writer that dies
 * holding a block loses what it had not handed out — a gap in the sequence, never a duplicate
 * (US-11). Concurrent `next()` calls on one allocator share one reservation in flight.
 *
 * @example
 * const blocks = new BlockAllocator({ counter, blockSize: 1_000, limit: CODE_SPACE });
 * const n = await blocks.next();   // the first call reserves [0, 1000); the next 999 are local
 * blocks.stats;                    // { reservations: 1, issued: 1 }
 */
import { assert } from "@casebook/kit/assert";

/** The shared counter: one atomic add, returning the value AFTER it. */
export interface CounterPort {
  reserve(count: number): Promise<number>;
}

/** The counter passed the end of the code space: there is no number left to hand out. */
export class CounterExhaustedError extends Error {
  readonly end: number;

  constructor(end: number, limit: number) {
    super(`counter reached ${end}, past the code space of ${limit} numbers`);
    this.end = end;
  }
}

export const DEFAULT_BLOCK_SIZE = 1_000;
export const MAX_BLOCK_SIZE = 1_000_000;

export interface BlockAllocatorOptions {
  counter: CounterPort;
  /** Numbers reserved per counter call; default DEFAULT_BLOCK_SIZE (the seed's 1,000). */
  blockSize?: number;
  /** Numbers must stay below this (the code space, 62^7). */
  limit: number;
}

export interface AllocatorStats {
  /** Counter calls made (each one atomic add of `blockSize`). */
  readonly reservations: number;
  /** Numbers handed out. */
  readonly issued: number;
}

/** See the module comment. */
export class BlockAllocator {
  readonly blockSize: number;
  readonly #counter: CounterPort;
  readonly #limit: number;
  /** The current block: [#next, #end). */
  #next = 0;
  #end = 0;
  #reserving: Promise<void> | undefined;
  #reservations = 0;
  #issued = 0;

  constructor(options: BlockAllocatorOptions) {
    const size = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    if (!Number.isInteger(size) || size < 1 || size > MAX_BLOCK_SIZE) {
      throw new RangeError(`blockSize ${size} must be an integer in 1..${MAX_BLOCK_SIZE}`);
    }
    this.blockSize = size;
    this.#counter = options.counter;
    this.#limit = options.limit;
  }

  get stats(): AllocatorStats {
    return { reservations: this.#reservations, issued: this.#issued };
  }

  /** The next number: local while the block lasts, one counter call when it runs out. */
  async next(): Promise<number> {
    // Bounded: each pass either returns or awaits a reservation that refills the block.
    for (let pass = 0; pass < 1_000; pass++) {
      if (this.#next < this.#end) {
        this.#issued += 1;
        return this.#next++;
      }
      this.#reserving ??= this.#reserve().finally(() => {
        this.#reserving = undefined;
      });
      await this.#reserving;
    }
    throw new Error("block allocator: 1,000 reservations did not yield a number; callers outpace blocks");
  }

  async #reserve(): Promise<void> {
    const end = await this.#counter.reserve(this.blockSize);
    this.#reservations += 1;
    assert(
      Number.isSafeInteger(end) && end >= this.blockSize,
      `counter returned ${end} after adding ${this.blockSize}`,
    );
    if (end > this.#limit) throw new CounterExhaustedError(end, this.#limit);
    this.#next = end - this.blockSize;
    this.#end = end;
  }
}
