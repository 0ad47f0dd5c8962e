/**
 * The hot writer (MT-07's first consumer): reads the sample stream into each tenant's TSDB.
 * One durable consumer per partition (`hot-writer-p<N>`, filter `metrics.samples.*.<N>`), each
 * applied strictly in stream order even across crashes and retries (MT-06).
 *
 * In batches: each fetch takes up to `maxBatchMessages` messages (the consumer's ack-pending
 * bound). They are applied in seq order, a tenant's consecutive messages of one kind (first
 * deliveries, or redeliveries) merged into ONE append — one WAL write and one fsync for the
 * run instead of one per message — and acked only after every run of the batch is durable, all
 * in one round trip (`ackAll`).
 * A run the TSDB refuses (a message out of order against what is stored) is applied again
 * message by message, as before batching, so only the offending message is dropped (`term`)
 * and counted — the sender was answered when the stream took it.
 *
 * Order through redeliveries: a writer killed after the fsync and before its acks gets its
 * batch again after the ack wait (`deliveryCount` 2); a redelivery's samples at or before each
 * series' newest are the ones the crash already stored and are skipped (`stored: "skip"`) —
 * sound only if no message of a partition is applied before an older one that is still
 * unacked. With several unacked, a restarted writer could be handed new messages at once
 * while the dead one's batch waits out its ack wait (or a delivery lost on the way could wait
 * out its own). A writer acks or terms every message of a batch before its next fetch, so
 * when a fetch's deliveries continue the consumer's delivery count (`deliverySeq`) without a
 * gap from the last one it settled, nothing else is unacked. Otherwise — its first fetch, after
 * a failed round, a gap — it asks the consumer how many are unacked (`ackPending`) and fetches
 * on until it holds all of them, then applies them all in seq order.
 *
 * New series past a cardinality ceiling (MT-16) are left out and reported to `onLimited`
 * (the cardinality alert).
 *
 * @example
 * const writer = await startHotWriter({ client, tsdbs, tenantOf, partitions: 16, onError });
 * await writer.stop();
 */
import type { StreamClient, StreamMessage } from "@casebook/infra/stream/stream";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { systemRandom } from "@casebook/kit/random";
import type { AppendPlan } from "../domain/head-block.ts";
import { seriesKey } from "../domain/labels.ts";
import {
  concatColumns,
  type KeyedSeries,
  keyedSeries,
  type SampleColumns,
  sampleCountOf,
} from "../domain/sample-columns.ts";
import { DEFAULT_INTERNED_SERIES, SeriesInterner } from "../domain/series-interner.ts";
import { decodeStreamColumns } from "../domain/stream-batch.ts";
import { SAMPLE_STREAM, SAMPLE_SUBJECT_PREFIX } from "../store/sample-stream.ts";
import type { Tenant } from "../store/tenant-repository.ts";
import type { TenantTsdbs } from "../store/tenant-tsdbs.ts";
import type { AppendResult, Tsdb } from "../store/tsdb.ts";

export interface HotWriterOptions {
  readonly client: StreamClient;
  readonly tsdbs: TenantTsdbs;
  /** The tenant's limits by id; undefined = unknown tenant (its messages are dropped and counted). */
  readonly tenantOf: (id: string) => Promise<Tenant | undefined>;
  readonly partitions: number;
  /** Redelivery of an unacked message (a writer that died mid-batch). Default 30 s. */
  readonly ackWaitMs?: number;
  /** Messages per fetch = unacked at most per partition. Default 64; 1 applies one at a time. */
  readonly maxBatchMessages?: number;
  /** Stream bytes merged into one append (a batch is cut into runs of this). Default 4 MiB. */
  readonly maxRunBytes?: number;
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
  /** Test hook: a batch's messages, in the order they are applied, before anything of it is. */
  readonly beforeApply?: (batch: ReadonlyArray<{ seq: number; deliveryCount: number }>) => void;
  /** Test hook: a batch's messages are durable (WAL fsynced) and not yet acked. */
  readonly afterDurable?: (seqs: readonly number[]) => void;
  readonly onLimited?: (tenant: string, limited: AppendPlan["limited"]) => void;
  /** A message dropped; `samples` it carried (0 when it could not be decoded). */
  readonly onDropped?: (event: { tenant: string; seq: number; reason: string; samples: number }) => void;
  readonly onError: (error: unknown) => void;
}

export const HOT_WRITER_CONSUMER = "hot-writer";

export interface HotWriter {
  stop(): Promise<void>;
}

const DEFAULT_BATCH_MESSAGES = 64;
const DEFAULT_RUN_BYTES = 4 << 20;

/** A fetched message, decoded; `batch` undefined when it could not be (`reason` says why). */
interface Decoded {
  readonly message: StreamMessage;
  readonly tenant?: string;
  readonly batch?: SampleColumns<KeyedSeries>;
  readonly reason?: string;
  readonly carried: number;
}

/** What becomes of a message once its run is durable. */
type Outcome = "ack" | "term";

function decoderOf(interner: SeriesInterner<KeyedSeries>): (message: StreamMessage) => Decoded {
  return (message) => {
    try {
      const { tenant, batch } = decodeStreamColumns(message.data, { interner, entryOf: keyedSeries });
      return { message, tenant, batch, carried: sampleCountOf(batch) };
    } catch (error) {
      return { message, reason: String(error), carried: 0 };
    }
  };
}

/**
 * A batch's decoded messages (seq order) cut into runs: one tenant, one kind of delivery,
 * at most `maxBytes` of stream bytes (one message at least). Different tenants are different
 * TSDBs, so a run takes a tenant's messages in their order wherever the others fall.
 */
function runsOf(messages: readonly Decoded[], maxBytes: number): Decoded[][] {
  const open = new Map<string, { run: Decoded[]; bytes: number }>();
  const runs: Decoded[][] = [];
  for (const d of messages) {
    const key = `${d.message.deliveryCount > 1 ? "re" : "first"}:${d.tenant}`;
    const other = `${d.message.deliveryCount > 1 ? "first" : "re"}:${d.tenant}`;
    open.delete(other); // a change of kind closes the tenant's run: the next one starts after it
    let current = open.get(key);
    if (current === undefined || current.bytes + d.message.data.length > maxBytes) {
      current = { run: [], bytes: 0 };
      open.set(key, current);
      runs.push(current.run);
    }
    current.run.push(d);
    current.bytes += d.message.data.length;
  }
  return runs;
}

export async function startHotWriter(options: HotWriterOptions): Promise<HotWriter> {
  const maxMessages = options.maxBatchMessages ?? DEFAULT_BATCH_MESSAGES;
  const maxRunBytes = options.maxRunBytes ?? DEFAULT_RUN_BYTES;
  const ackWaitMs = options.ackWaitMs ?? 30_000;
  const expiresMs = options.expiresMs ?? 1_000;
  const retryDelayMs = (count: number) => Math.min(30_000, 100 * 2 ** count);
  // One table for every partition's loop: a series is met in one partition only.
  const decode = decoderOf(new SeriesInterner({ maxEntries: DEFAULT_INTERNED_SERIES }));

  /** One run in one append; the outcome of each of its messages by seq. */
  const applyRun = async (
    db: Tsdb,
    tenant: Tenant,
    run: readonly Decoded[],
    outcomes: Map<number, Outcome>,
  ) => {
    const stored = run[0]!.message.deliveryCount > 1 ? "skip" : "refuse";
    const merged = concatColumns(run.map((d) => d.batch!));
    const result = await db.appendColumns(merged, { onLimit: "skip", stored });
    if (!result.ok) {
      // One message is out of order: find it the way it was found before batching.
      if (run.length > 1) {
        for (const d of run) await applyRun(db, tenant, [d], outcomes);
        return;
      }
      const d = run[0]!;
      const reason = `${result.code}: ${result.detail}`;
      options.onDropped?.({ tenant: tenant.id, seq: d.message.seq, reason, samples: d.carried });
      outcomes.set(d.message.seq, "term");
      return;
    }
    report(tenant, run, result);
    for (const d of run) outcomes.set(d.message.seq, "ack");
  };

  const report = (tenant: Tenant, run: readonly Decoded[], result: AppendResult & { ok: true }) => {
    if (result.limited.length > 0) options.onLimited?.(tenant.id, result.limited);
    // A series refused in one message of the run is left out of the later ones too (listed once).
    const refused = new Set(result.limited.map((entry) => seriesKey(entry.labels)));
    let index = 0;
    for (const d of run) {
      let samples = 0;
      let refusedSamples = 0;
      const { series, offsets } = d.batch!;
      for (let i = 0; i < series.length; i++) {
        if (refused.size > 0 && refused.has(series[i]!.key)) refusedSamples += offsets[i + 1]! - offsets[i]!;
        samples += result.samplesByIndex[index] ?? 0;
        index++;
      }
      options.onApplied?.({
        tenant: tenant.id,
        samples,
        refusedSamples,
        seq: d.message.seq,
        storedAtMs: d.message.timeMs,
      });
    }
  };

  /** Applies a batch (seq order); acks or terms every message once all of it is durable. */
  const applyBatch = async (messages: readonly StreamMessage[]) => {
    options.beforeApply?.(messages.map(({ seq, deliveryCount }) => ({ seq, deliveryCount })));
    const outcomes = new Map<number, Outcome>();
    const readable: Decoded[] = [];
    for (const d of messages.map(decode)) {
      if (d.batch === undefined) {
        options.onDropped?.({ tenant: "", seq: d.message.seq, reason: d.reason!, samples: 0 });
        outcomes.set(d.message.seq, "term");
      } else readable.push(d);
    }
    const tenants = new Map<string, Tenant | undefined>();
    for (const run of runsOf(readable, maxRunBytes)) {
      const id = run[0]!.tenant!;
      if (!tenants.has(id)) tenants.set(id, await options.tenantOf(id));
      const tenant = tenants.get(id);
      if (tenant === undefined) {
        for (const d of run) {
          options.onDropped?.({
            tenant: id,
            seq: d.message.seq,
            reason: "unknown tenant",
            samples: d.carried,
          });
          outcomes.set(d.message.seq, "term");
        }
        continue;
      }
      await applyRun(await options.tsdbs.of(tenant), tenant, run, outcomes);
    }
    options.afterDurable?.(messages.map((m) => m.seq));
    // One round trip for the batch's acks (terms, rare, one each).
    const termed = messages.filter((m) => outcomes.get(m.seq) === "term");
    await Promise.all([
      options.client.ackAll(messages.filter((m) => outcomes.get(m.seq) !== "term")),
      ...termed.map((m) => m.term()),
    ]);
  };

  const loops: BackgroundLoop[] = [];
  for (let partition = 0; partition < options.partitions; partition++) {
    const name = `${HOT_WRITER_CONSUMER}-p${partition}`;
    await options.client.ensureConsumer(SAMPLE_STREAM, {
      name,
      filterSubject: `${SAMPLE_SUBJECT_PREFIX}.*.${partition}`,
      deliver: { from: "all" },
      ackWaitMs,
      maxDeliver: 1_000,
      // A batch in flight; its order is kept by holding every unacked message first (see above).
      maxAckPending: maxMessages,
    });
    // Whole milliseconds: the stream port refuses a fraction, and a wait cut to the hold's
    // deadline (performance.now() arithmetic) is one — a CI run logged that refusal mid-hold.
    const fetch = (waitMs: number) =>
      options.client.fetch(SAMPLE_STREAM, name, { maxMessages, expiresMs: Math.max(1, Math.ceil(waitMs)) });

    /**
     * Fetches on until every unacked message of the consumer is held (a newer delivery of one
     * replaces the older), or undefined when they did not all come within an ack wait — then
     * nothing is applied, and all of them come back.
     */
    const holdEveryUnacked = async (first: readonly StreamMessage[]) => {
      const held = new Map(first.map((m) => [m.seq, m]));
      const deadline = performance.now() + ackWaitMs;
      for (;;) {
        const { ackPending } = await options.client.consumerState(SAMPLE_STREAM, name);
        if (held.size >= ackPending) return [...held.values()];
        const left = deadline - performance.now();
        if (left <= 0) return undefined;
        for (const m of await fetch(Math.min(expiresMs, left))) held.set(m.seq, m);
      }
    };

    // The consumer's last delivery this writer saw, when it saw every one before it and settled
    // them all; undefined at the start (a writer before this one may have died mid-batch) and
    // after a failure — then the next batch is completed from the consumer's count first.
    let settledThrough: number | undefined;
    const loop = new BackgroundLoop({
      name: `hot writer ${SAMPLE_STREAM}/${name}`,
      round: async () => {
        const after = settledThrough;
        settledThrough = undefined;
        const fetched = (await fetch(expiresMs)).toSorted((a, b) => a.deliverySeq - b.deliverySeq);
        if (fetched.length === 0) {
          settledThrough = after;
          return false;
        }
        const unbroken = after !== undefined && fetched.every((m, i) => m.deliverySeq === after + 1 + i);
        const batch = unbroken ? fetched : await holdEveryUnacked(fetched);
        if (batch === undefined) return false;
        const sorted = batch.toSorted((a, b) => a.seq - b.seq);
        try {
          await applyBatch(sorted);
        } catch (error) {
          // Back in order after a pause; the next round holds them all again before applying.
          await Promise.allSettled(sorted.map((m) => m.nak(retryDelayMs(m.deliveryCount))));
          throw error;
        }
        settledThrough = Math.max(...batch.map((m) => m.deliverySeq));
        return fetched.length === maxMessages; // full: more is likely waiting
      },
      idleMs: 20,
      failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
      onError: (error) => options.onError(error),
    });
    loop.start();
    loops.push(loop);
  }
  return {
    stop: async () => {
      await Promise.allSettled(loops.map((loop) => loop.stop()));
    },
  };
}
