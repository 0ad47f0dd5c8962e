/**
 * The rollup builder (MT-07's third consumer, MT-10/11): reads the sample stream with its own
 * durable consumer (`rollup-builder`, every partition, in stream order) and builds the 1 min
 * tier (min, max, sum, count per series per aligned minute) from the raw samples; a second
 * loop merges each minute the watermark has closed into one row (a minute spread over batches
 * is a partial row per batch until then) and writes each hour it has closed to the 1 h tier's
 * Parquet files, from the 1 min tier (each tier from the previous).
 *
 * In batches: each fetch takes up to `maxBatchMessages` messages (the consumer's ack-pending
 * bound), cut into runs of at most `maxBatchBytes`; a run's 1 min rows and the consumer's
 * position (its highest stream seq) commit in ONE DuckDB transaction (`RollupStore.applyBatch`),
 * and its messages are acked only after that commit. A remote-write request is one message per
 * partition, so this is one commit per many requests instead of one per message. A fetch that
 * was not full is followed by a pause of `lingerMs` (250 ms) before the next, so the messages of
 * a quarter second go in one transaction: each costs DuckDB ~2–5 ms of CPU in statements and
 * commit whatever its size, and a 1 min tier has no use for rows a few milliseconds sooner.
 *
 * Exactly once in effect across redeliveries: the store applies only seqs above the committed
 * position, so a redelivery — the builder died between a commit and its acks — is acked
 * without effect, and a crash before the commit rolls the whole run back. That is sound only
 * if no seq is applied after a higher one; with several messages unacked, a redelivery can
 * arrive behind newer messages (some of a run's redeliveries fetched before the rest expired),
 * so a run that does not start right after the committed position has its gap read from the
 * stream by seq (`getMessage`; the consumer covers every subject of the stream) and applied
 * first, in order — their own deliveries come later and are acked as applied. A gap longer
 * than a batch is not filled: the run is left unacked and comes back after the ack wait.
 *
 * @example
 * const builder = await startRollupBuilder({ client, store, onError });
 * await builder.stop();
 */
import type { StoredMessage, StreamClient, StreamMessage } from "@casebook/infra/stream/stream";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { systemRandom } from "@casebook/kit/random";
import { type KeyedSeries, keyedSeries } from "../domain/sample-columns.ts";
import { DEFAULT_INTERNED_SERIES, SeriesInterner } from "../domain/series-interner.ts";
import { decodeStreamColumns } from "../domain/stream-batch.ts";
import type { ApplyResult, RollupMessage, RollupStore } from "../store/rollup-store.ts";
import { SAMPLE_STREAM, SAMPLE_SUBJECT_PREFIX } from "../store/sample-stream.ts";

export const ROLLUP_BUILDER_CONSUMER = "rollup-builder";
const DEFAULT_LINGER_MS = 250;

export interface RollupBuilderOptions {
  readonly client: StreamClient;
  readonly store: RollupStore;
  /** Redelivery of an unacked message (a builder that died mid-message). Default 30 s. */
  readonly ackWaitMs?: number;
  /** Messages per fetch = unacked at most (the batch's message bound). Default 256. */
  readonly maxBatchMessages?: number;
  /** Bytes of messages per DuckDB transaction (a fetch is cut into runs of this). Default 8 MiB. */
  readonly maxBatchBytes?: number;
  /** Long poll of one fetch; stop() waits at most this long. Default 1 s. */
  readonly expiresMs?: number;
  /** Pause after a fetch that was not full, so the next gathers more per transaction. Default 250 ms. */
  readonly lingerMs?: number;
  /** Pause between two passes merging closed minutes and writing closed hours to Parquet. */
  readonly closeIntervalMs: number;
  readonly onApplied?: (event: { tenant: string; seq: number } & ApplyResult) => void;
  /** Test hook: runs after the commit, before the ack (a throw there = a crash in between for that message). */
  readonly afterCommit?: (seq: number) => void;
  readonly onDropped?: (event: { seq: number; reason: string }) => void;
  readonly onError: (error: unknown) => void;
}

export interface RollupBuilder {
  /** Writes the hours closed so far to Parquet now (the loop does it every closeIntervalMs). */
  closeHours(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A DuckDB transaction costs ~10 ms of CPU whatever its rows (each statement is planned): 256
 * messages (16 remote-write requests of 16 partitions) per transaction cost 25% less CPU per
 * sample than 64 on the bench's data; 1,024, no less than 256.
 */
const DEFAULT_BATCH_MESSAGES = 256;
const DEFAULT_BATCH_BYTES = 8 << 20;

/** A message of a run: decoded, or undecodable (dropped, its seq still passed). */
type Decoded = { seq: number; message?: RollupMessage; reason?: string };

/** Series found again by their label block: the text decoded and keyed once per series. */
function decoderOf(interner: SeriesInterner<KeyedSeries>): (message: StoredMessage) => Decoded {
  return (message) => {
    try {
      const { tenant, partition, batch } = decodeStreamColumns(message.data, {
        interner,
        entryOf: keyedSeries,
      });
      return { seq: message.seq, message: { seq: message.seq, tenant, partition, batch } };
    } catch (error) {
      return { seq: message.seq, reason: String(error) };
    }
  };
}

/** Cuts the fetched messages (in seq order) into runs of at most `maxBytes` (one message at least). */
function runsOf(messages: readonly StreamMessage[], maxBytes: number): StreamMessage[][] {
  const runs: StreamMessage[][] = [];
  let bytes = Number.POSITIVE_INFINITY;
  for (const message of messages) {
    if (bytes + message.data.length > maxBytes) {
      runs.push([]);
      bytes = 0;
    }
    runs.at(-1)!.push(message);
    bytes += message.data.length;
  }
  return runs;
}

export async function startRollupBuilder(options: RollupBuilderOptions): Promise<RollupBuilder> {
  const { client, store } = options;
  const maxMessages = options.maxBatchMessages ?? DEFAULT_BATCH_MESSAGES;
  const maxBytes = options.maxBatchBytes ?? DEFAULT_BATCH_BYTES;
  await client.ensureConsumer(SAMPLE_STREAM, {
    name: ROLLUP_BUILDER_CONSUMER,
    filterSubject: `${SAMPLE_SUBJECT_PREFIX}.>`,
    deliver: { from: "all" },
    ackWaitMs: options.ackWaitMs ?? 30_000,
    maxDeliver: 1_000,
    // A batch in flight; its order is restored by seq (the gap read), see above.
    maxAckPending: maxMessages,
  });
  const retryDelayMs = (count: number) => Math.min(30_000, 100 * 2 ** count);
  const decode = decoderOf(new SeriesInterner({ maxEntries: DEFAULT_INTERNED_SERIES }));

  /**
   * The messages after `from` and before `seq` still on the stream (read by seq), at most a
   * batch of them; `complete` false when more remain.
   */
  const gapBetween = async (
    from: number,
    seq: number,
  ): Promise<{ gap: Decoded[]; complete: boolean; through: number }> => {
    if (seq <= from + 1) return { gap: [], complete: true, through: from };
    const { firstSeq } = await client.streamState(SAMPLE_STREAM);
    const start = Math.max(from + 1, firstSeq);
    const end = Math.min(seq, start + maxMessages);
    const gap: Decoded[] = [];
    for (let s = start; s < end; s++) {
      const stored = await client.getMessage(SAMPLE_STREAM, s);
      if (stored !== undefined) gap.push(decode(stored));
    }
    return { gap, complete: end === seq, through: end - 1 };
  };

  /**
   * One run in one transaction, acked after the commit. False: a gap longer than a batch was
   * met — its first part is applied and the run left unacked (it comes back after the ack wait,
   * the gap shorter by a batch).
   */
  const applyRun = async (run: readonly StreamMessage[]): Promise<boolean> => {
    const position = await store.appliedSeq();
    const delivered: Decoded[] = [];
    const fromStream: Decoded[] = [];
    let last = position;
    for (const message of run) {
      if (message.seq > position) {
        const { gap, complete, through } = await gapBetween(last, message.seq);
        fromStream.push(...gap);
        if (!complete) {
          await store.applyBatch(readableOf([...fromStream, ...delivered]), through);
          dropped(fromStream);
          return false;
        }
        last = message.seq;
      }
      delivered.push(decode(message)); // at or below the position: a redelivery, skipped by the store
    }
    const readable = readableOf([...fromStream, ...delivered]);
    const results = await store.applyBatch(readable, last);
    const bySeq = new Map(readable.map((m, i) => [m.seq, results[i]!]));
    dropped(fromStream);
    // The applied messages' acks in one round trip (`ackAll`); terms and naks, rare, one each.
    const applied: StreamMessage[] = [];
    const others: Array<Promise<void>> = [];
    for (const [i, message] of run.entries()) {
      const d = delivered[i]!;
      if (d.message === undefined) {
        if (message.seq > position) options.onDropped?.({ seq: message.seq, reason: d.reason! });
        others.push(message.term());
        continue;
      }
      try {
        options.afterCommit?.(message.seq);
        options.onApplied?.({ tenant: d.message.tenant, seq: message.seq, ...bySeq.get(message.seq)! });
        applied.push(message);
      } catch (error) {
        options.onError(error);
        others.push(message.nak(retryDelayMs(message.deliveryCount)));
      }
    }
    await Promise.all([client.ackAll(applied), ...others]);
    return true;
  };
  const readableOf = (list: readonly Decoded[]) =>
    list.filter((d) => d.message !== undefined).map((d) => d.message!);
  const dropped = (list: readonly Decoded[]) => {
    for (const d of list) if (d.reason !== undefined) options.onDropped?.({ seq: d.seq, reason: d.reason });
  };

  const consumer = new BackgroundLoop({
    name: `rollup builder ${SAMPLE_STREAM}/${ROLLUP_BUILDER_CONSUMER}`,
    round: async () => {
      const fetched = await client.fetch(SAMPLE_STREAM, ROLLUP_BUILDER_CONSUMER, {
        maxMessages,
        expiresMs: options.expiresMs ?? 1_000,
      });
      const sorted = fetched.toSorted((a, b) => a.seq - b.seq);
      for (const run of runsOf(sorted, maxBytes)) {
        // A failed run stays unacked (rolled back): it and the runs behind it come back after
        // the ack wait, in the order the position check and the gap read restore.
        if (!(await applyRun(run))) return false;
      }
      return fetched.length === maxMessages; // full: more is likely waiting
    },
    idleMs: options.lingerMs ?? DEFAULT_LINGER_MS,
    failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
  });
  consumer.start();
  const closer = new BackgroundLoop({
    name: "rollup closer (minutes merged, hours to Parquet)",
    round: async () => {
      await store.compactMinutes();
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
