/**
 * One tenant's time-series database (MT-17): the head block in memory, its WAL, and the
 * immutable blocks compacted out of it, under `<dataDir>/<tenant>/`. Appends take a lock so
 * that plan → WAL (fsynced) → commit runs for one batch at a time; reads never wait for it.
 *
 * - Open: read the blocks, replay the WAL into the head (torn tail truncated), samples below
 *   the newest block's end skipped.
 * - Append: all or nothing (`HeadBlock.plan`), durable before the caller hears "ok".
 * - Compact: when the head spans 1.5 block ranges (Prometheus's rule), the chunks before the
 *   last full range go to a block, and the WAL is checkpointed to what the head keeps.
 *
 * @example
 * const db = await Tsdb.open({ dir, blockRangeMs: 7_200_000, limits });
 * const result = await db.append(batch);          // { ok: true, samples, series } or a refusal
 * db.select([labelMatcher("=", "__name__", "up")], from, to);
 * await db.close();
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type AppendOptions,
  type AppendPlan,
  type AppendRefusal,
  type CardinalityLimits,
  type ColumnSeries,
  HeadBlock,
  type SeriesData,
  type SeriesSamples,
} from "../domain/head-block.ts";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { seriesKey } from "../domain/labels.ts";
import { columnsOf, type SampleColumns } from "../domain/sample-columns.ts";
import { type Block, type BlockMeta, blockName, readBlock, readBlocks, writeBlock } from "./block-files.ts";
import { type ReplayReport, Wal } from "./wal.ts";

export interface TsdbOptions {
  readonly dir: string;
  readonly blockRangeMs: number;
  readonly limits: CardinalityLimits;
}

export type AppendResult =
  | {
      ok: true;
      samples: number;
      /** Samples stored per entry of the batch (by its index). */
      samplesByIndex: readonly number[];
      newSeries: number;
      limited: AppendPlan["limited"];
    }
  | AppendRefusal;

export class Tsdb {
  readonly head: HeadBlock;
  readonly #options: TsdbOptions;
  readonly #blocks: Block[];
  #wal: Wal;
  #lock: Promise<unknown> = Promise.resolve();
  readonly replay: ReplayReport;

  private constructor(
    options: TsdbOptions,
    head: HeadBlock,
    blocks: Block[],
    wal: Wal,
    replay: ReplayReport,
  ) {
    this.#options = options;
    this.head = head;
    this.#blocks = blocks;
    this.#wal = wal;
    this.replay = replay;
  }

  static async open(options: TsdbOptions): Promise<Tsdb> {
    const blocks = await readBlocks(join(options.dir, "blocks"));
    const head = new HeadBlock({ blockRangeMs: options.blockRangeMs, limits: options.limits });
    const newest = blocks.at(-1);
    if (newest) head.minValidT = newest.meta.maxt;
    const walDir = join(options.dir, "wal");
    const replay = await Wal.replay(walDir, {
      series: (ref, labels) => head.replaySeries(ref, labels),
      sample: (ref, t, v) => void head.replaySample(ref, t, v),
    });
    return new Tsdb(options, head, blocks, await Wal.open(walDir), replay);
  }

  get blocks(): readonly BlockMeta[] {
    return this.#blocks.map((b) => b.meta);
  }

  #locked<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(work, work);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  /** Appends a batch: all of it, durable, or none of it with the refusal. */
  append(batch: readonly SeriesSamples[], options: AppendOptions = {}): Promise<AppendResult> {
    return this.appendColumns(
      columnsOf(batch, (labels) => ({ labels })),
      options,
    );
  }

  /** `append` of a batch in columns (what the hot writer decodes the stream into). */
  appendColumns(batch: SampleColumns<ColumnSeries>, options: AppendOptions = {}): Promise<AppendResult> {
    return this.#locked(async () => {
      const plan = this.head.planColumns(batch, options);
      if (!plan.ok) return plan;
      await this.#wal.append(plan.newSeries, {
        count: plan.sampleCount,
        forEach: (visit) => {
          for (const { ref, spans } of plan.entries)
            for (let k = 0; k < spans.length; k += 2)
              for (let j = spans[k]!; j < spans[k + 1]!; j++)
                visit(ref, plan.timestamps[j]!, plan.values[j]!);
        },
      });
      this.head.commit(plan);
      await this.#compactIfDue();
      return {
        ok: true,
        samples: plan.sampleCount,
        samplesByIndex: plan.samplesByIndex,
        newSeries: plan.newSeries.length,
        limited: plan.limited,
      };
    });
  }

  async #compactIfDue(): Promise<void> {
    const range = this.head.timeRange();
    const rangeMs = this.#options.blockRangeMs;
    if (range === undefined || range.maxt - range.mint < rangeMs * 1.5) return;
    const boundary = Math.floor((range.maxt - rangeMs / 2) / rangeMs) * rangeMs;
    if (boundary <= range.mint) return;
    await this.#compactBefore(Math.floor(range.mint / rangeMs) * rangeMs, boundary);
  }

  /** Forces a compaction of everything before `boundary` (a multiple of the block range). */
  compact(boundary: number): Promise<BlockMeta | undefined> {
    return this.#locked(async () => {
      const range = this.head.timeRange();
      if (range === undefined || range.mint >= boundary) return undefined;
      const rangeMs = this.#options.blockRangeMs;
      return this.#compactBefore(Math.floor(range.mint / rangeMs) * rangeMs, boundary);
    });
  }

  async #compactBefore(mint: number, boundary: number): Promise<BlockMeta> {
    // The chunks stay readable in the head until the block holding them is read back; then
    // the head lets go and the block arrives in one synchronous step (no query sees neither).
    const series = this.head.sealedBefore(boundary);
    const blocksDir = join(this.#options.dir, "blocks");
    const meta = await writeBlock(blocksDir, { mint, maxt: boundary, series });
    const block = await readBlock(join(blocksDir, `b-${mint}-${boundary}`));
    this.head.truncateBefore(boundary);
    this.#blocks.push(block);
    const kept = [...this.head.entries()];
    await this.#wal.checkpoint(kept, {
      count: kept.reduce((n, entry) => n + entry.timestamps.length, 0),
      forEach: (visit) => {
        for (const { ref, timestamps, values } of kept)
          for (let i = 0; i < timestamps.length; i++) visit(ref, timestamps[i]!, values[i]!);
      },
    });
    return meta;
  }

  /**
   * Retention of the raw tier (MT-09): the blocks whose every sample is older than `cutoff`
   * leave the read path, then the disk. Returns how many went.
   */
  dropBlocksBefore(cutoff: number): Promise<number> {
    return this.#locked(async () => {
      const gone = this.#blocks.filter((b) => b.meta.maxt <= cutoff);
      if (gone.length === 0) return 0;
      this.#blocks.splice(0, this.#blocks.length, ...this.#blocks.filter((b) => b.meta.maxt > cutoff));
      for (const { meta } of gone) {
        await rm(join(this.#options.dir, "blocks", blockName(meta.mint, meta.maxt)), {
          recursive: true,
          force: true,
        });
      }
      return gone.length;
    });
  }

  /** Samples of every matching series in [mint, maxt], blocks and head stitched per series. */
  select(matchers: readonly LabelMatcher[], mint: number, maxt: number): SeriesData[] {
    const parts = [
      ...this.#blocks.map((b) => b.select(matchers, mint, maxt)),
      this.head.select(matchers, mint, maxt),
    ];
    if (parts.length === 1 || parts.slice(0, -1).every((p) => p.length === 0)) return parts.at(-1)!;
    const merged = new Map<
      string,
      { labels: SeriesData["labels"]; timestamps: number[]; chunks: ArrayLike<number>[] }
    >();
    for (const part of parts) {
      for (const series of part) {
        const key = seriesKey(series.labels);
        let entry = merged.get(key);
        if (entry === undefined) {
          entry = { labels: series.labels, timestamps: [], chunks: [] };
          merged.set(key, entry);
        }
        entry.timestamps.push(...series.timestamps);
        entry.chunks.push(series.values);
      }
    }
    return [...merged.values()].map(({ labels, timestamps, chunks }) => {
      const values = new Float64Array(timestamps.length);
      let offset = 0;
      for (const chunk of chunks) {
        values.set(chunk, offset);
        offset += chunk.length;
      }
      return { labels, timestamps, values };
    });
  }

  /** Label names of every series, blocks and head together. */
  labelNames(): string[] {
    const names = new Set(this.head.index.labelNames());
    for (const block of this.#blocks) for (const name of block.index.labelNames()) names.add(name);
    return [...names].sort();
  }

  labelValues(name: string): string[] {
    const values = new Set(this.head.index.labelValues(name));
    for (const block of this.#blocks) for (const value of block.index.labelValues(name)) values.add(value);
    return [...values].sort();
  }

  /** Waits for the append in flight, then closes the WAL. */
  async close(): Promise<void> {
    await this.#locked(() => this.#wal.close());
  }
}
