/**
 * The agent's batches (MT-03): the points closed since the last cut become remote-write
 * requests — the ingest's own Prometheus remote-write 1.0 (protobuf, snappy-compressed), so
 * the agent needs no format of its own and any remote-write receiver can take its batches.
 * A series closed in several windows since the last cut is ONE entry with its samples in
 * time order; a cut larger than `maxSamples` becomes several batches, each series whole and
 * every batch after the one before it in time, so the ingest's per-series order holds.
 *
 * @example
 * const batches = agentBatches(aggregator.closeDue(now), { maxSamples: 10_000 });
 * batches[0].body; // snappy(WriteRequest) — POST it to /api/v1/write
 */
import type { SeriesSamples } from "./head-block.ts";
import { seriesKey } from "./labels.ts";
import { encodeWriteRequest } from "./remote-write.ts";
import { snappyCompress } from "./snappy.ts";

export const DEFAULT_AGENT_MAX_BATCH_SAMPLES = 10_000;

export interface AgentBatch {
  /** snappy(protobuf WriteRequest): the body of a remote-write POST. */
  readonly body: Uint8Array;
  readonly samples: number;
  /** The protobuf's size before snappy: the compression the batch got. */
  readonly rawBytes: number;
}

/** Merges points by series (samples in time order), then cuts them into bodies of at most maxSamples. */
export function agentBatches(
  points: readonly SeriesSamples[],
  options: { maxSamples?: number } = {},
): AgentBatch[] {
  const maxSamples = options.maxSamples ?? DEFAULT_AGENT_MAX_BATCH_SAMPLES;
  const merged = new Map<
    string,
    { labels: SeriesSamples["labels"]; samples: Array<{ t: number; v: number }> }
  >();
  for (const point of points) {
    const key = seriesKey(point.labels);
    const entry = merged.get(key);
    if (entry) entry.samples.push(...point.samples);
    else merged.set(key, { labels: point.labels, samples: [...point.samples] });
  }
  const batches: AgentBatch[] = [];
  let current: Array<{ labels: SeriesSamples["labels"]; samples: Array<{ t: number; v: number }> }> = [];
  let count = 0;
  const flush = () => {
    if (current.length === 0) return;
    const raw = encodeWriteRequest(current);
    batches.push({ body: snappyCompress(raw), samples: count, rawBytes: raw.length });
    current = [];
    count = 0;
  };
  for (const entry of merged.values()) {
    entry.samples.sort((a, b) => a.t - b.t);
    if (count > 0 && count + entry.samples.length > maxSamples) flush();
    current.push(entry);
    count += entry.samples.length;
  }
  flush();
  return batches;
}
