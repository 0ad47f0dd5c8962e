/**
 * Snowflake ids (Twitter, 2010): 64-bit, roughly time-ordered, made by each worker alone
 * with no coordination. From the most significant bit:
 *
 *     0 | 41 bits: ms since `epochMs` | 10 bits: worker id | 12 bits: sequence
 *
 * 41 bits of ms last 69.7 years from the epoch; 1,024 workers; 4,096 ids per worker per
 * ms. The top bit stays 0, so an id fits a signed BIGINT column and sorts like its time.
 * Ids are returned as `bigint` (a JS number holds only 53 bits); send them to clients as
 * decimal strings.
 *
 * Two edges, each handled explicitly:
 * - **The clock goes back** (NTP stepped it, a VM migrated): ids issued now could repeat
 *   ones already issued. Like Twitter's original, `next()` refuses — it throws
 *   SNOWFLAKE_CLOCK_BACKWARDS with `behindMs` — until the clock passes the last id's ms
 *   again; it never waits by itself, since a jump of minutes would hang every caller.
 * - **4,096 ids in one ms**: the sequence is spent, so `next()` waits for the next ms by
 *   reading the clock again (Twitter's `tilNextMillis`), at most `MAX_SPIN_READS` reads;
 *   a clock that does not move by then is stalled (SNOWFLAKE_CLOCK_STALLED).
 *
 * Uniqueness rests on each live worker holding its own worker id (lease one, e.g. from
 * the database) and on a restarted worker's clock not being behind its previous life's
 * last id (start after the clock passed it, or persist the last ms).
 *
 * @example
 * const ids = new SnowflakeGenerator({ clock: systemClock, workerId: 7 });
 * const id = ids.next();              // 1234567890123456789n (a bigint)
 * decodeSnowflake(id);                // { timestampMs, workerId: 7, sequence: 0 }
 */
import { assert } from "./assert.ts";
import type { Clock } from "./clock.ts";
import { kitErrors } from "./kit-errors.ts";

export const TIMESTAMP_BITS = 41;
export const WORKER_ID_BITS = 10;
export const SEQUENCE_BITS = 12;
export const MAX_WORKER_ID = 2 ** WORKER_ID_BITS - 1;
export const MAX_SEQUENCE = 2 ** SEQUENCE_BITS - 1;
/** Largest ms offset from the epoch an id can carry (about 69.7 years). */
export const MAX_ELAPSED_MS = 2 ** TIMESTAMP_BITS - 1;
/** Casebook's default epoch, 2025-01-01T00:00:00Z: ids run out in 2094. */
export const DEFAULT_SNOWFLAKE_EPOCH_MS = Date.UTC(2025, 0, 1);
/** Clock reads while waiting out a spent millisecond before the clock counts as stalled. */
export const MAX_SPIN_READS = 10_000_000;

const WORKER_SHIFT = BigInt(SEQUENCE_BITS);
const TIME_SHIFT = BigInt(SEQUENCE_BITS + WORKER_ID_BITS);

export interface SnowflakeOptions {
  /** Wall-clock time (`nowMs`): the id carries it. */
  clock: Clock;
  /** This worker's id, 0..1023; unique among the workers issuing ids at the same time. */
  workerId: number;
  /** The epoch ms 0 stands for. Default DEFAULT_SNOWFLAKE_EPOCH_MS; never change it once ids exist. */
  epochMs?: number;
}

export interface SnowflakeParts {
  /** Wall-clock ms the id was made in. */
  timestampMs: number;
  workerId: number;
  sequence: number;
}

export class SnowflakeGenerator {
  readonly #clock: Clock;
  readonly #workerId: bigint;
  readonly #epochMs: number;
  #lastMs = -1;
  #sequence = 0;
  #lastId = -1n;

  constructor(options: SnowflakeOptions) {
    const { workerId } = options;
    if (!(Number.isInteger(workerId) && workerId >= 0 && workerId <= MAX_WORKER_ID)) {
      throw new RangeError(`workerId must be an integer in [0, ${MAX_WORKER_ID}], got ${workerId}`);
    }
    const epochMs = options.epochMs ?? DEFAULT_SNOWFLAKE_EPOCH_MS;
    if (!Number.isSafeInteger(epochMs)) throw new RangeError(`epochMs must be an integer, got ${epochMs}`);
    this.#clock = options.clock;
    this.#workerId = BigInt(workerId);
    this.#epochMs = epochMs;
  }

  /** A new id, greater than every id this generator issued before. */
  next(): bigint {
    let nowMs = this.#elapsedMs();
    if (nowMs < this.#lastMs) {
      throw kitErrors.create("SNOWFLAKE_CLOCK_BACKWARDS", {
        fields: { behindMs: this.#lastMs - nowMs, lastMs: this.#lastMs + this.#epochMs },
      });
    }
    if (nowMs === this.#lastMs) {
      this.#sequence = (this.#sequence + 1) & MAX_SEQUENCE;
      if (this.#sequence === 0) nowMs = this.#untilNextMs();
    } else {
      this.#sequence = 0;
    }
    this.#lastMs = nowMs;
    const id = (BigInt(nowMs) << TIME_SHIFT) | (this.#workerId << WORKER_SHIFT) | BigInt(this.#sequence);
    // The whole point: a repeat would be a duplicate primary key somewhere downstream.
    assert(id > this.#lastId, "snowflake ids of one generator strictly increase");
    this.#lastId = id;
    return id;
  }

  #elapsedMs(): number {
    const elapsedMs = Math.floor(this.#clock.nowMs()) - this.#epochMs;
    if (!(elapsedMs >= 0 && elapsedMs <= MAX_ELAPSED_MS)) {
      throw new RangeError(
        `the clock is ${elapsedMs} ms from the epoch; a snowflake holds 0..${MAX_ELAPSED_MS}`,
      );
    }
    return elapsedMs;
  }

  /** The sequence of this ms is spent: read the clock until it shows a later ms. */
  #untilNextMs(): number {
    for (let reads = 0; reads < MAX_SPIN_READS; reads++) {
      const nowMs = this.#elapsedMs();
      if (nowMs > this.#lastMs) return nowMs;
    }
    throw kitErrors.create("SNOWFLAKE_CLOCK_STALLED", { fields: { lastMs: this.#lastMs + this.#epochMs } });
  }
}

/** Splits an id back into its time, worker and sequence (`epochMs` as it was made with). */
export function decodeSnowflake(id: bigint, epochMs = DEFAULT_SNOWFLAKE_EPOCH_MS): SnowflakeParts {
  if (id < 0n || id >= 1n << 63n)
    throw new RangeError(`a snowflake is a 63-bit non-negative integer, got ${id}`);
  return {
    timestampMs: Number(id >> TIME_SHIFT) + epochMs,
    workerId: Number((id >> WORKER_SHIFT) & BigInt(MAX_WORKER_ID)),
    sequence: Number(id & BigInt(MAX_SEQUENCE)),
  };
}

/** The smallest id of `timestampMs`: `WHERE id >= snowflakeFloor(t)` selects ids made at t or later. */
export function snowflakeFloor(timestampMs: number, epochMs = DEFAULT_SNOWFLAKE_EPOCH_MS): bigint {
  const elapsedMs = Math.floor(timestampMs) - epochMs;
  if (!(elapsedMs >= 0 && elapsedMs <= MAX_ELAPSED_MS))
    throw new RangeError(`${timestampMs} is outside the id range`);
  return BigInt(elapsedMs) << TIME_SHIFT;
}
