/**
 * The orphan sweep of chat's media (CH-24), as S3's lifecycle rules do for uploads nobody
 * used: an upload that no message carries `orphanAfterMs` after it was authorized (never
 * sent, or sent and then deleted everywhere) loses its row, then its object. Once a round,
 * oldest first, in batches:
 *
 * 1. rows — `MediaStore.sweepOrphans` deletes them (a send attaching one at that moment
 *    either locked it first, and the sweep skips it, or finds it gone and is answered
 *    CHAT_MEDIA_NOT_FOUND: the foreign key of migrations/009 keeps a message from carrying
 *    a removed object);
 * 2. their objects — removed after the rows' commit, so a crash in between leaves bytes
 *    without a row, never a row without its bytes;
 * 3. what such a crash left — every few rounds, the objects last written before the cutoff
 *    whose row is gone, and the temporary files of uploads cut off mid-PUT.
 *
 * `orphanAfterMs` is far above an upload URL's 15 min, so a row is never swept while its
 * upload may still arrive. Several send services may sweep at once: a row is deleted by one.
 *
 * @example
 * const sweeper = new MediaSweeper({ rows, objects, clock, orphanAfterMs: 86_400_000, everyMs: 600_000, onSwept, log });
 * sweeper.start();
 * await sweeper.round(); // a test's one round: { rows, objects } removed
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { MediaStore } from "../store/media-store.ts";
import type { ObjectDirectory } from "../store/object-directory.ts";

/** Rows deleted per statement. */
export const SWEEP_BATCH = 500;
/** Rounds between two passes over the directory for objects left without a row. */
export const ROUNDS_PER_OBJECT_PASS = 6;

export interface MediaSweeperOptions {
  readonly rows: Pick<MediaStore, "sweepOrphans" | "existing">;
  readonly objects: Pick<ObjectDirectory, "remove" | "keysWrittenBefore">;
  readonly clock: Clock;
  readonly orphanAfterMs: number;
  readonly everyMs: number;
  /** Rows per statement (SWEEP_BATCH). */
  readonly batch?: number;
  readonly onSwept?: (what: "row" | "object", count: number) => void;
  readonly log: { warn(fields: Record<string, unknown>, message: string): void };
}

export class MediaSweeper {
  readonly #o: MediaSweeperOptions;
  readonly #loop: BackgroundLoop;
  #rounds = 0;

  constructor(options: MediaSweeperOptions) {
    this.#o = options;
    this.#loop = new BackgroundLoop({
      name: "media orphan sweep",
      round: async () => (await this.round()).more,
      idleMs: options.everyMs,
      failureBackoff: { capMs: options.everyMs, jitter: "none" },
      onError: (err) => options.log.warn({ err }, "media sweep failed; the next round retries"),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One round: a batch of orphan rows and their objects, and every few rounds the leftovers. */
  async round(): Promise<{ rows: number; objects: number; more: boolean }> {
    const { rows, objects, clock, orphanAfterMs, onSwept } = this.#o;
    const cutoffMs = clock.nowMs() - orphanAfterMs;
    const batch = this.#o.batch ?? SWEEP_BATCH;
    const swept = await rows.sweepOrphans(cutoffMs, batch);
    let removed = 0;
    // An upload that never arrived has a row and no object: only removed objects are counted.
    for (const id of swept) if (await objects.remove(String(id))) removed++;
    if (this.#rounds++ % ROUNDS_PER_OBJECT_PASS === 0) removed += await this.#leftovers(cutoffMs);
    if (swept.length > 0) onSwept?.("row", swept.length);
    if (removed > 0) onSwept?.("object", removed);
    return { rows: swept.length, objects: removed, more: swept.length === batch };
  }

  /** Objects older than the cutoff whose row is gone (a crash between a sweep's two steps). */
  async #leftovers(cutoffMs: number): Promise<number> {
    const keys = await this.#o.objects.keysWrittenBefore(cutoffMs);
    let removed = 0;
    for (let i = 0; i < keys.length; i += SWEEP_BATCH) {
      const slice = keys.slice(i, i + SWEEP_BATCH);
      const kept = await this.#o.rows.existing(slice.map(BigInt));
      for (const key of slice) if (!kept.has(BigInt(key)) && (await this.#o.objects.remove(key))) removed++;
    }
    return removed;
  }
}
