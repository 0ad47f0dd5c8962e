/**
 * The node's background loop (Redis's serverCron): `hz` times a second, one active
 * expiry cycle within its time budget (CA-02: expired keys nobody reads are reclaimed),
 * and a sample of the memory high-water mark for INFO. It runs on kit's BackgroundLoop, as
 * every background loop does; its pauses are unref'd timers, so it never keeps a process
 * alive on its own.
 *
 * @example
 * const cron = startServerCron({ keyspace, onTick: () => server.sampleMemoryPeak() });
 * await cron.stop();
 */
import { BackgroundLoop, unrefSleep } from "@casebook/kit/background-loop";
import type { ActiveExpiryReport } from "../domain/active-expiry.ts";

export interface CronTarget {
  activeExpire(budgetMs: number): ActiveExpiryReport;
}

export interface ServerCronOptions {
  readonly keyspace: CronTarget;
  /** Ticks per second (Redis's hz, default 10). */
  readonly hz?: number;
  /** Share of each tick the expiry cycle may use (Redis: 25%). */
  readonly expiryBudgetShare?: number;
  /** Runs after each tick's expiry cycle (memory sampling, metrics). */
  readonly onTick?: (report: ActiveExpiryReport) => void;
}

export interface ServerCron {
  /** Resolves once the tick in progress (if any) has finished. */
  stop(): Promise<void>;
}

export const DEFAULT_HZ = 10;
export const DEFAULT_EXPIRY_BUDGET_SHARE = 0.25;

export function startServerCron(options: ServerCronOptions): ServerCron {
  const hz = options.hz ?? DEFAULT_HZ;
  if (!(hz >= 1 && hz <= 500)) throw new RangeError(`hz must be 1..500, got ${hz}`);
  const tickMs = 1000 / hz;
  const budgetMs = tickMs * (options.expiryBudgetShare ?? DEFAULT_EXPIRY_BUDGET_SHARE);
  const loop = new BackgroundLoop({
    name: "server cron",
    round: async () => {
      const report = options.keyspace.activeExpire(budgetMs);
      options.onTick?.(report);
      return false; // one cycle a tick, as Redis's hz
    },
    idleMs: tickMs,
    // A tick does not fail on I/O (it is in-memory work); a throw is a bug, retried at the tick rate.
    failureBackoff: { capMs: tickMs, jitter: "none" },
    onError: (error) => process.emitWarning(`server cron tick failed: ${String(error)}`),
    sleep: unrefSleep,
  });
  loop.start();
  return { stop: () => loop.stop() };
}
