/**
 * The hot writer (MT-07's first consumer): reads the sample stream into each tenant's TSDB.
 * One durable consumer per partition (`hot-writer-p<N>`, filter `metrics.samples.*.<N>`), each
 * with at most ONE message delivered and unacked, so a partition is applied strictly in stream
 * order even across crashes and retries (MT-06): a message is appended (fsynced to the WAL),
 * then acked. A writer killed between the two gets that one message again after the ack wait
 * (`deliveryCount` 2), and only that one — nothing behind it can be delivered first — so the
 * redelivery's samples at or before each series' newest are the ones the crash already stored
 * and are skipped (`stored: "skip"`): nothing lost, nothing doubled.
 *
 * New series past a cardinality ceiling (MT-16) are left out and reported to `onLimited`
 * (the cardinality alert); a message the TSDB refuses (out of order against what is stored)
 * is dropped (`term`) and counted — the sender was answered when the stream took it.
 *
 * @example
 * const writer = await startHotWriter({ client, tsdbs, tenantOf, partitions: 16, onError });
 * await writer.stop();
 */
import type { StreamClient } from "@casebook/infra/stream/stream";
import { type StreamConsumer, startStreamConsumer } from "@casebook/infra/stream/stream-consumer";
import { systemRandom } from "@casebook/kit/random";
import type { AppendPlan } from "../domain/head-block.ts";
import { decodeStreamBatch } from "../domain/stream-batch.ts";
import { SAMPLE_STREAM, SAMPLE_SUBJECT_PREFIX } from "../store/sample-stream.ts";
import type { Tenant } from "../store/tenant-repository.ts";
import type { TenantTsdbs } from "../store/tenant-tsdbs.ts";

export interface HotWriterOptions {
  readonly client: StreamClient;
  readonly tsdbs: TenantTsdbs;
  /** The tenant's limits by id; undefined = unknown tenant (its messages are dropped and counted). */
  readonly tenantOf: (id: string) => Promise<Tenant | undefined>;
  readonly partitions: number;
  /** Redelivery of an unacked message (a writer that died mid-message). Default 30 s. */
  readonly ackWaitMs?: number;
  /** Long poll of one fetch; stop() waits at most this long. Default 1 s. */
  readonly expiresMs?: number;
  /**
   * A message applied and about to be acked: `samples` stored, `refusedSamples` those of its new
   * series past a ceiling, `storedAtMs` when the stream stored it (the lag the console plots).
   */
  readonly onApplied?: (event: {
    tenant: string;
    samples: number;
    refusedSamples: number;
    seq: number;
    storedAtMs: number;
  }) => void;
  readonly onLimited?: (tenant: string, limited: AppendPlan["limited"]) => void;
  /** A message dropped; `samples` it carried (0 when it could not be decoded). */
  readonly onDropped?: (event: { tenant: string; seq: number; reason: string; samples: number }) => void;
  readonly onError: (error: unknown) => void;
}

export const HOT_WRITER_CONSUMER = "hot-writer";

export interface HotWriter {
  stop(): Promise<void>;
}

export async function startHotWriter(options: HotWriterOptions): Promise<HotWriter> {
  const consumers: StreamConsumer[] = [];
  for (let partition = 0; partition < options.partitions; partition++) {
    const name = `${HOT_WRITER_CONSUMER}-p${partition}`;
    await options.client.ensureConsumer(SAMPLE_STREAM, {
      name,
      filterSubject: `${SAMPLE_SUBJECT_PREFIX}.*.${partition}`,
      deliver: { from: "all" },
      ackWaitMs: options.ackWaitMs ?? 30_000,
      maxDeliver: 1_000,
      // One in flight: a partition is applied in stream order, redeliveries included.
      maxAckPending: 1,
    });
    consumers.push(
      startStreamConsumer({
        client: options.client,
        stream: SAMPLE_STREAM,
        consumer: name,
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
            options.onDropped?.({ tenant: "", seq: message.seq, reason: String(error), samples: 0 });
            return "term";
          }
          const samplesOf = (index: number) => batch.series[index]?.samples.length ?? 0;
          const carried = batch.series.reduce((n, _, index) => n + samplesOf(index), 0);
          const tenant = await options.tenantOf(batch.tenant);
          if (tenant === undefined) {
            options.onDropped?.({
              tenant: batch.tenant,
              seq: message.seq,
              reason: "unknown tenant",
              samples: carried,
            });
            return "term";
          }
          const db = await options.tsdbs.of(tenant);
          const result = await db.append(batch.series, {
            onLimit: "skip",
            stored: message.deliveryCount > 1 ? "skip" : "refuse",
          });
          if (!result.ok) {
            options.onDropped?.({
              tenant: tenant.id,
              seq: message.seq,
              reason: `${result.code}: ${result.detail}`,
              samples: carried,
            });
            return "term";
          }
          if (result.limited.length > 0) options.onLimited?.(tenant.id, result.limited);
          options.onApplied?.({
            tenant: tenant.id,
            samples: result.samples,
            refusedSamples: result.limited.reduce((n, entry) => n + samplesOf(entry.index), 0),
            seq: message.seq,
            storedAtMs: message.timeMs,
          });
          return "ack";
        },
      }),
    );
  }
  return {
    stop: async () => {
      await Promise.allSettled(consumers.map((c) => c.stop()));
    },
  };
}
