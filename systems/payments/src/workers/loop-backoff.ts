/**
 * How the payments worker loops (saga orchestrator, refund retrier, outbox relay) back off after
 * consecutive FAILED rounds (the database is unreachable): the kit's BackgroundLoop doubles the
 * poll interval per failure up to LOOP_BACKOFF_CAP_MS, with equal jitter so many workers do not
 * retry in step. Without it a loop whose round fails at once (connection refused) retries at its
 * poll rate — 40 times a second for a 25 ms poll — filling the log and the pool's connect queue
 * for the whole outage; with it, the loop fails a handful of times, then waits up to the cap, and
 * after the database returns it resumes within one cap.
 *
 * @example
 * new BackgroundLoop({ name: "saga orchestrator", round, idleMs: 100, failureBackoff: loopFailureBackoff(random), onError });
 * // pauses after failures 1, 2, 3 …: in [100, 200), [200, 400), [400, 800) … up to [1 000, 2 000)
 */
import type { FailureBackoff } from "@casebook/kit/background-loop";
import type { RandomSource } from "@casebook/kit/random";

/** Longest wait between failed rounds: the most a worker lags behind a database that came back. */
export const LOOP_BACKOFF_CAP_MS = 2_000;

/** The payments loops' failure backoff: up to LOOP_BACKOFF_CAP_MS (never below the poll), equal jitter. */
export function loopFailureBackoff(random: RandomSource): FailureBackoff {
  return { capMs: LOOP_BACKOFF_CAP_MS, jitter: "equal", random };
}
