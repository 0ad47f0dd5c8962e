/**
 * Big-key detection (CA-19): one 5 MB value read 1,000 times a second is 5 GB/s out of one
 * node: its network link saturates while the cluster's averages look fine. The client is
 * where this is cheapest to see (it already holds every value it reads and writes), so it
 * measures each value and reports a key whose value reaches `thresholdBytes`, with how
 * often it was met and the bytes per second that implies. The remedy is the owner's to
 * choose (split, paginate, compress, cache rendered fragments); detection only names it.
 *
 * Bounded: at most `maxTrackedKeys` big keys are tracked (a flood of new big keys is
 * reported key by key but not remembered past the bound), and each key is reported at
 * most once per `reportIntervalMs`, so a hot big key does not flood the log.
 *
 * @example
 * const detector = new BigKeyDetector({
 *   thresholdBytes: 1_048_576, reportIntervalMs: 60_000, maxTrackedKeys: 1_000, clock: systemClock,
 *   onBigKey: (report) => log.warn(report, "big key"),
 * });
 * detector.observe("event:42:page", 5_000_000, "read");
 */
import type { Clock } from "@casebook/kit/clock";
import { requireInteger } from "../errors.ts";

export type BigKeyOp = "read" | "write";

export interface BigKeyReport {
  readonly key: string;
  /** Size of the value just seen. */
  readonly bytes: number;
  readonly op: BigKeyOp;
  /** Times the key was read or written at or above the threshold since its last report (this one included). */
  readonly seen: number;
  /** Bytes per second the key moved since its last report (0 on the first). */
  readonly bytesPerS: number;
}

export interface BigKeyDetectorOptions {
  readonly thresholdBytes: number;
  readonly reportIntervalMs: number;
  readonly maxTrackedKeys: number;
  readonly clock: Clock;
  readonly onBigKey: (report: BigKeyReport) => void;
}

interface Tracked {
  bytes: number;
  seen: number;
  movedBytes: number;
  reportedAtMs: number;
}

export class BigKeyDetector {
  readonly #options: BigKeyDetectorOptions;
  readonly #tracked = new Map<string, Tracked>();

  constructor(options: BigKeyDetectorOptions) {
    requireInteger("bigKeys.thresholdBytes", options.thresholdBytes, 1, 2 ** 31);
    requireInteger("bigKeys.reportIntervalMs", options.reportIntervalMs, 0, 86_400_000);
    requireInteger("bigKeys.maxTrackedKeys", options.maxTrackedKeys, 1, 1_000_000);
    this.#options = options;
  }

  /** Looks at one value of `bytes` for `key`; reports it when it is big and not reported recently. */
  observe(key: string, bytes: number, op: BigKeyOp): void {
    if (bytes < this.#options.thresholdBytes) return;
    const nowMs = this.#options.clock.monotonicMs();
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      if (this.#tracked.size < this.#options.maxTrackedKeys) {
        this.#tracked.set(key, { bytes, seen: 0, movedBytes: 0, reportedAtMs: nowMs });
      }
      this.#options.onBigKey({ key, bytes, op, seen: 1, bytesPerS: 0 });
      return;
    }
    tracked.bytes = bytes;
    tracked.seen += 1;
    tracked.movedBytes += bytes;
    const elapsedMs = nowMs - tracked.reportedAtMs;
    if (elapsedMs < this.#options.reportIntervalMs) return;
    const bytesPerS = elapsedMs > 0 ? Math.round((tracked.movedBytes * 1_000) / elapsedMs) : 0;
    this.#options.onBigKey({ key, bytes, op, seen: tracked.seen, bytesPerS });
    tracked.seen = 0;
    tracked.movedBytes = 0;
    tracked.reportedAtMs = nowMs;
  }

  /** The `count` biggest tracked keys, biggest first (for a metrics page or a periodic log line). */
  biggest(count: number): { key: string; bytes: number }[] {
    return [...this.#tracked]
      .map(([key, tracked]) => ({ key, bytes: tracked.bytes }))
      .sort((a, b) => b.bytes - a.bytes || (a.key < b.key ? -1 : 1))
      .slice(0, count);
  }
}
