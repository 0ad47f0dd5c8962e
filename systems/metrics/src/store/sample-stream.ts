/**
 * The stream between the ingest and its consumers (MT-07), on infra's stream port (NATS
 * JetStream with `NATS_URL`, the in-process log otherwise). An accepted batch is split by
 * partition (hash of the series, MT-06) and each partition's share is one message on
 * `metrics.samples.<tenant>.<partition>`; the ingest answers the sender only once the stream
 * has acknowledged every share, so an acknowledged sample is on the stream — durable on
 * JetStream's file storage — whatever happens to the consumers after.
 *
 * Each share carries a dedup id (a hash of its bytes): a publish retried inside the stream's
 * duplicate window is stored once. Consumers read the whole stream in order with their own
 * durable consumer, so within a partition (a subject) every series keeps its time order.
 *
 * @example
 * const samples = new SampleStream(client, { partitions: 16, retentionMs: 3_600_000 });
 * await samples.ensure();
 * await samples.publish("acme", batch); // resolves after the stream's acks
 */
import { createHash } from "node:crypto";
import type { StreamClient } from "@casebook/infra/stream/stream";
import type { SeriesSamples } from "../domain/head-block.ts";
import { columnsOf, type SampleColumns } from "../domain/sample-columns.ts";
import { type PartitionedSeries, partitionedSeries } from "../domain/series-partition.ts";
import { encodeStreamColumns } from "../domain/stream-batch.ts";

export const SAMPLE_STREAM = "METRICS_SAMPLES";
export const SAMPLE_SUBJECT_PREFIX = "metrics.samples";

export interface SampleStreamOptions {
  readonly partitions: number;
  /** How long the stream keeps samples: bounds a consumer's catch-up and the evaluator's replay. */
  readonly retentionMs: number;
  readonly maxBytes?: number;
  readonly maxMessageBytes?: number;
  readonly storage?: "file" | "memory";
}

export function sampleSubject(tenant: string, partition: number): string {
  return `${SAMPLE_SUBJECT_PREFIX}.${tenant}.${partition}`;
}

export interface PublishReport {
  readonly messages: number;
  /** Partition → samples of the batch published there. */
  readonly samplesByPartition: ReadonlyMap<number, number>;
}

export class SampleStream {
  readonly client: StreamClient;
  readonly #options: SampleStreamOptions;

  constructor(client: StreamClient, options: SampleStreamOptions) {
    this.client = client;
    this.#options = options;
  }

  get maxMessageBytes(): number {
    // nats-server's default max_payload is 1 MiB: stay under it with room for headers.
    return this.#options.maxMessageBytes ?? 960 * 1024;
  }

  async ensure(): Promise<void> {
    await this.client.ensureStream({
      name: SAMPLE_STREAM,
      subjects: [`${SAMPLE_SUBJECT_PREFIX}.>`],
      storage: this.#options.storage ?? "file",
      maxMessages: 10_000_000,
      maxBytes: this.#options.maxBytes ?? 1024 * 1024 * 1024,
      maxAgeMs: this.#options.retentionMs,
      maxMessageBytes: this.maxMessageBytes,
      duplicateWindowMs: Math.min(120_000, this.#options.retentionMs),
      // Past a bound the oldest go, as MT-04 asks of the agent: the ingest stays up, and a
      // consumer that far behind loses the oldest samples (its lag is on /metrics) instead.
      discard: "old",
    });
  }

  /** Publishes a batch given as objects (labels canonical): see `publishColumns`. */
  publish(tenant: string, batch: readonly SeriesSamples[]): Promise<PublishReport> {
    const partitions = this.#options.partitions;
    return this.publishColumns(
      tenant,
      columnsOf(batch, (labels) => partitionedSeries(labels, partitions)),
    );
  }

  /**
   * Publishes the batch's partitions together; resolves once the stream acknowledged all of
   * them, with the number of messages and the samples per partition (the ingest counts them:
   * each series carries its partition, hashed once when the ingest first met it). A share
   * larger than a message is cut in halves (by series, then by samples: a series' halves go
   * in order to the same subject).
   */
  async publishColumns(tenant: string, batch: SampleColumns<PartitionedSeries>): Promise<PublishReport> {
    const byPartition = new Map<number, number[]>();
    const samplesByPartition = new Map<number, number>();
    const { offsets } = batch;
    for (let i = 0; i < batch.series.length; i++) {
      const { partition } = batch.series[i]!;
      const list = byPartition.get(partition);
      if (list === undefined) byPartition.set(partition, [i]);
      else list.push(i);
      samplesByPartition.set(
        partition,
        (samplesByPartition.get(partition) ?? 0) + offsets[i + 1]! - offsets[i]!,
      );
    }
    const messages: Array<{ subject: string; bytes: Uint8Array }> = [];
    for (const [partition, indexes] of byPartition) this.#cut(tenant, partition, batch, indexes, messages);
    // One subject's messages in order (a series cut in halves), subjects in parallel.
    const bySubject = Map.groupBy(messages, (m) => m.subject);
    await Promise.all(
      [...bySubject.values()].map(async (list) => {
        for (const { subject, bytes } of list) {
          const msgId = createHash("sha256").update(subject).update(bytes).digest("base64url");
          await this.client.publish(subject, bytes, { msgId });
        }
      }),
    );
    return { messages: messages.length, samplesByPartition };
  }

  #cut(
    tenant: string,
    partition: number,
    batch: SampleColumns<PartitionedSeries>,
    indexes: readonly number[],
    out: Array<{ subject: string; bytes: Uint8Array }>,
  ): void {
    const bytes = encodeStreamColumns(tenant, partition, batch, indexes);
    const only = indexes[0]!;
    const from = batch.offsets[only]!;
    const to = batch.offsets[only + 1]!;
    if (bytes.length <= this.maxMessageBytes || (indexes.length === 1 && to - from <= 1)) {
      out.push({ subject: sampleSubject(tenant, partition), bytes });
      return;
    }
    if (indexes.length > 1) {
      const half = indexes.length >> 1;
      this.#cut(tenant, partition, batch, indexes.slice(0, half), out);
      this.#cut(tenant, partition, batch, indexes.slice(half), out);
      return;
    }
    const middle = from + ((to - from) >> 1);
    for (const [start, end] of [
      [from, middle],
      [middle, to],
    ] as const) {
      const part: SampleColumns<PartitionedSeries> = {
        series: [batch.series[only]!],
        offsets: Uint32Array.of(0, end - start),
        timestamps: batch.timestamps.subarray(start, end),
        values: batch.values.subarray(start, end),
      };
      this.#cut(tenant, partition, part, [0], out);
    }
  }
}
