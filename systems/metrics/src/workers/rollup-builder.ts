/**
 * The rollup builder (MT-07's third consumer, MT-10/11): reads the sample stream with its own
 * durable consumer (`rollup-builder`, every partition, in stream order) and builds the 1 min
 * tier (min, max, sum, count per series per aligned minute) from the raw samples; a second
 * loop writes each hour the watermark has closed to the 1 h tier's Parquet files, from the
 * 1 min tier (each tier from the previous).
 *
 * Exactly once in effect across redeliveries: a message's 1 min upserts and the consumer's
 * position (its stream seq) commit in one DuckDB transaction (`RollupStore.apply`), and the
 * consumer holds one unacked message at a time, so messages are applied in stream order and a
 * redelivery — the builder died between the commit and the ack — has a seq at or below the
 * committed one and is acked without effect. A crash before the commit rolls it back and the
 * redelivery applies it once.
 *
 * @example
 * const builder = await startRollupBuilder({ client, store, onError });
 * await builder.stop();
 */
import type { StreamClient } from "@casebook/infra/stream/stream";
import { type StreamConsumer, startStreamConsumer } from "@casebook/infra/stream/stream-consumer";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { systemRandom } from "@casebook/kit/random";
import { decodeStreamBatch } from "../domain/stream-batch.ts";
import type { ApplyResult, RollupStore } from "../store/rollup-store.ts";
import { SAMPLE_STREAM, SAMPLE_SUBJECT_PREFIX } from "../store/sample-stream.ts";

export const ROLLUP_BUILDER_CONSUMER = "rollup-builder";

export interface RollupBuilderOptions {
  readonly client: StreamClient;
  readonly store: RollupStore;
  /** Redelivery of an unacked message (a builder that died mid-message). Default 30 s. */
  readonly ackWaitMs?: number;
  /** Long poll of one fetch; stop() waits at most this long. Default 1 s. */
  readonly expiresMs?: number;
  /** Pause between two passes writing closed hours to Parquet. */
  readonly closeIntervalMs: number;
  readonly onApplied?: (event: { tenant: string; seq: number } & ApplyResult) => void;
  /** Test hook: runs after the commit, before the ack (a throw there = a crash in between). */
  readonly afterCommit?: (seq: number) => void;
  readonly onDropped?: (event: { seq: number; reason: string }) => void;
  readonly onError: (error: unknown) => void;
}

export interface RollupBuilder {
  /** Writes the hours closed so far to Parquet now (the loop does it every closeIntervalMs). */
  closeHours(): Promise<number>;
  stop(): Promise<void>;
}

export async function startRollupBuilder(options: RollupBuilderOptions): Promise<RollupBuilder> {
  const { client, store } = options;
  await client.ensureConsumer(SAMPLE_STREAM, {
    name: ROLLUP_BUILDER_CONSUMER,
    filterSubject: `${SAMPLE_SUBJECT_PREFIX}.>`,
    deliver: { from: "all" },
    ackWaitMs: options.ackWaitMs ?? 30_000,
    maxDeliver: 1_000,
    // One in flight: messages are applied in stream order, so "seq ≤ applied" means "applied".
    maxAckPending: 1,
  });
  const consumer: StreamConsumer = startStreamConsumer({
    client,
    stream: SAMPLE_STREAM,
    consumer: ROLLUP_BUILDER_CONSUMER,
    maxMessages: 1,
    expiresMs: options.expiresMs ?? 1_000,
    idleMs: 20,
    retryDelayMs: (count) => Math.min(30_000, 100 * 2 ** count),
    failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
    handle: async (message) => {
      let batch: ReturnType<typeof decodeStreamBatch>;
      try {
        batch = decodeStreamBatch(message.data);
      } catch (error) {
        options.onDropped?.({ seq: message.seq, reason: String(error) });
        return "term";
      }
      const result = await store.apply({
        seq: message.seq,
        tenant: batch.tenant,
        partition: batch.partition,
        series: batch.series,
      });
      options.afterCommit?.(message.seq);
      options.onApplied?.({ tenant: batch.tenant, seq: message.seq, ...result });
      return "ack";
    },
  });
  const closer = new BackgroundLoop({
    name: "rollup hour closer",
    round: async () => {
      await store.closeHours();
      return false;
    },
    idleMs: options.closeIntervalMs,
    failureBackoff: { capMs: 60_000, jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
  });
  closer.start();
  return {
    closeHours: () => store.closeHours(),
    stop: async () => {
      await Promise.allSettled([consumer.stop(), closer.stop()]);
    },
  };
}
