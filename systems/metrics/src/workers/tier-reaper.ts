/**
 * Retention per tier (MT-09/18), on kit's BackgroundLoop: every `intervalMs` it deletes what
 * each tier no longer keeps, by the clock — raw blocks older than the raw retention (7 d by
 * default), 1 min rows older than the 1 min retention (30 d), 1 h day files older than the
 * 1 h retention (1 y). The pyramid is the trade-off of MT-18: detail is kept as long as it is
 * queried, and a coarser tier answers after.
 *
 * The raw tier's head (the newest 1.5 block ranges, in memory) is never reaped: retention
 * works in whole blocks, as Prometheus's does.
 *
 * @example
 * const reaper = startTierReaper({ clock, tsdbs, store, retention, intervalMs: 600_000, onError });
 * await reaper.runOnce(); // { rawBlocks, minuteRows, hourFiles }
 * await reaper.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { RollupStore } from "../store/rollup-store.ts";
import type { TenantTsdbs } from "../store/tenant-tsdbs.ts";

export interface TierRetention {
  readonly rawMs: number;
  readonly minuteMs: number;
  readonly hourMs: number;
}

export interface ReapReport {
  readonly rawBlocks: number;
  readonly minuteRows: number;
  readonly hourFiles: number;
}

export interface TierReaperOptions {
  readonly clock: Clock;
  readonly tsdbs: TenantTsdbs;
  /** Undefined when there is no rollup builder (the direct ingest path): raw only. */
  readonly store: RollupStore | undefined;
  readonly retention: TierRetention;
  readonly intervalMs: number;
  readonly onReaped?: (report: ReapReport) => void;
  readonly onError: (error: unknown) => void;
}

export interface TierReaper {
  runOnce(): Promise<ReapReport>;
  stop(): Promise<void>;
}

export function startTierReaper(options: TierReaperOptions): TierReaper {
  const { clock, retention } = options;
  const runOnce = async (): Promise<ReapReport> => {
    const now = clock.nowMs();
    let rawBlocks = 0;
    for (const db of await options.tsdbs.opened())
      rawBlocks += await db.dropBlocksBefore(now - retention.rawMs);
    const rolled = options.store
      ? await options.store.reap({
          minuteBefore: now - retention.minuteMs,
          hourBefore: now - retention.hourMs,
        })
      : { minuteRows: 0, hourFiles: 0 };
    const report = { rawBlocks, ...rolled };
    options.onReaped?.(report);
    return report;
  };
  const loop = new BackgroundLoop({
    name: "tier reaper",
    round: async () => {
      await runOnce();
      return false;
    },
    idleMs: options.intervalMs,
    failureBackoff: { capMs: Math.max(options.intervalMs, 60_000), jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
  });
  loop.start();
  return { runOnce, stop: () => loop.stop() };
}
