/**
 * Series → partition (MT-06): the partition key is a hash of the series' canonical label set
 * (FNV-1a, 32 bits, over `seriesKey`), so one series lands in one partition whichever ingest
 * process receives it and in whatever label order it was sent — and each partition is consumed
 * in order, so each series keeps its time order. Different series spread evenly.
 *
 * @example
 * partitionOf([["__name__", "up"], ["job", "api"]], 16); // always the same number in [0, 16)
 * splitByPartition(batch, 16); // Map partition → that partition's series, batch order kept
 * partitionedSeries(labels, 16).partition; // the same number, kept with the series by the ingest
 */
import { type Labels, seriesKey } from "./labels.ts";
import { encodeLabelBlock } from "./stream-batch.ts";

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** The most partitions a stream may have: each is a consumer of the hot writer's. */
export const MAX_PARTITIONS = 1_024;

/** FNV-1a over the UTF-16 code units of `text`, as an unsigned 32-bit number. */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

export function partitionOf(labels: Labels, partitions: number): number {
  return fnv1a32(seriesKey(labels)) % partitions;
}

/** The batch's series grouped by partition; inside a partition, in batch order. */
export function splitByPartition<T extends { labels: Labels }>(
  batch: readonly T[],
  partitions: number,
): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const entry of batch) {
    const p = partitionOf(entry.labels, partitions);
    const list = out.get(p);
    if (list === undefined) out.set(p, [entry]);
    else list.push(entry);
  }
  return out;
}

/** A series as the ingest keeps it once met: its key, its partition, its label block for the stream. */
export interface PartitionedSeries {
  readonly labels: Labels;
  readonly key: string;
  readonly partition: number;
  readonly block: Uint8Array;
}

export function partitionedSeries(labels: Labels, partitions: number): PartitionedSeries {
  const key = seriesKey(labels);
  return { labels, key, partition: fnv1a32(key) % partitions, block: encodeLabelBlock(labels) };
}
