/**
 * How long a worker loop (saga orchestrator, refund retrier, outbox relay) waits before its next
 * round: its poll interval while rounds succeed; after consecutive FAILED rounds (the database is
 * unreachable), the poll interval doubling per failure up to a cap, with equal jitter. Without it
 * a loop whose round fails at once (connection refused) retries at its poll rate — 40 times a
 * second for a 25 ms poll — filling the log and the pool's connect queue for the whole outage;
 * with it, the loop fails a handful of times, then waits up to the cap, and after the database
 * returns it resumes within one cap.
 *
 * @example
 * let failures = 0;
 * // after each round: failures = ok ? 0 : failures + 1;
 * await sleep(loopDelayMs({ pollMs: 100, failures, random }));  // 100, then ~200, ~400 … ≤ 2 000
 */
import { backoffDelayMs, jitterDelayMs } from "@casebook/kit/backoff";
import type { RandomSource } from "@casebook/kit/random";

/** Longest wait between failed rounds: the most a worker lags behind a database that came back. */
export const LOOP_BACKOFF_CAP_MS = 2_000;

export interface LoopDelayInput {
  /** The loop's idle poll interval. */
  pollMs: number;
  /** Rounds that failed in a row; 0 after a round that succeeded. */
  failures: number;
  random: RandomSource;
  /** Default LOOP_BACKOFF_CAP_MS; never below pollMs. */
  capMs?: number;
}

/** The wait before the next round: pollMs after success, else min(cap, poll · 2^failures) with equal jitter. */
export function loopDelayMs(input: LoopDelayInput): number {
  const { pollMs, failures } = input;
  if (!Number.isInteger(failures) || failures < 0)
    throw new RangeError(`failures must be >= 0, got ${failures}`);
  if (failures === 0) return pollMs;
  const capMs = Math.max(pollMs, input.capMs ?? LOOP_BACKOFF_CAP_MS);
  // attempt failures + 1: the first failure already waits twice the poll interval (halved by jitter at worst).
  return jitterDelayMs(backoffDelayMs(failures + 1, pollMs, capMs), "equal", input.random);
}
