/**
 * One partition's share of an accepted batch as it travels on the stream (MT-07): the tenant,
 * the partition and its series with their samples, in a binary form that every consumer — hot
 * writer, rollup builder, alert evaluator — decodes on its own, for every message. So decoding
 * is built to cost little more than copying:
 *
 * - a version byte (`0xCC`), the tenant, the partition, the series and sample counts;
 * - per series: its **label block** — the canonical label set (sorted, validated at the
 *   ingest) as a pair count and length-prefixed UTF-8 names and values — behind its length,
 *   then its sample count, the timestamps as a zig-zag varint and zig-zag varint deltas, and
 *   the values as 8-byte little-endian IEEE 754 (a staleness marker keeps its exact NaN).
 *
 * A label block is the same bytes every time its series is sent (the ingest keeps it with the
 * series), so a consumer interns series by it (`series-interner.ts`): the text is decoded once
 * per series, and a message decodes into columns (`sample-columns.ts`) — no object per sample.
 * The forms the stream carried before (a string table, `0xCB`; JSON, `{`) still decode
 * (`stream-batch-legacy.ts`), so a stream retained across the upgrade is read through. The
 * decoder checks the shape: a foreign message is a clear RangeError naming what is wrong,
 * never a half-read batch.
 *
 * @example
 * const bytes = encodeStreamBatch({ tenant: "acme", partition: 3, series });
 * const { batch } = decodeStreamColumns(bytes, { interner, entryOf: (labels) => ({ labels, key: seriesKey(labels) }) });
 * batch.values[batch.offsets[0]]; // the same float64 bits
 */
import { ByteReader, ByteWriter } from "./byte-codec.ts";
import type { Labels } from "./labels.ts";
import { columnsOf, type SampleColumns, seriesSamplesOf } from "./sample-columns.ts";
import { SeriesInterner } from "./series-interner.ts";
import {
  decodeLegacyStreamBatch,
  fail,
  JSON_OPEN_BRACE,
  LEGACY_BINARY_VERSION,
  MAX_LABEL_PAIRS,
  type StreamBatch,
} from "./stream-batch-legacy.ts";

export type { StreamBatch } from "./stream-batch-legacy.ts";

/** First byte of the current form. */
export const STREAM_BATCH_VERSION = 0xcc;

/** A series as the publisher holds it: its labels and their label block. */
export interface EncodableSeries {
  readonly labels: Labels;
  readonly block: Uint8Array;
}

/** A partition's share, decoded: the batch's series are the consumer's interned entries. */
export interface StreamColumns<S extends { readonly labels: Labels }> {
  readonly tenant: string;
  readonly partition: number;
  readonly batch: SampleColumns<S>;
}

export interface DecodeColumnsOptions<S extends { readonly labels: Labels }> {
  /** The consumer's series met before, by label block; a decoded label set becomes `entryOf`'s. */
  readonly interner: SeriesInterner<S>;
  readonly entryOf: (labels: Labels) => S;
  /** A series it refuses is left out, its samples stepped over unread (the shape is still checked). */
  readonly keep?: (entry: S) => boolean;
}

const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/** The label block of a canonical label set (what a series is interned by downstream). */
export function encodeLabelBlock(labels: Labels): Uint8Array {
  const out = new ByteWriter();
  out.uvarint(labels.length);
  for (const [name, value] of labels) {
    out.string(name);
    out.string(value);
  }
  return out.finish();
}

function labelsOfBlock(bytes: Uint8Array, start: number, end: number): Labels {
  const input = new ByteReader(bytes.subarray(start, end));
  const pairs = input.uvarint();
  if (pairs > MAX_LABEL_PAIRS) fail("labels must be an array of pairs");
  const labels: Array<readonly [string, string]> = [];
  for (let l = 0; l < pairs; l++) labels.push([input.string(), input.string()]);
  if (input.remaining !== 0) fail(`${input.remaining} bytes after a label block`);
  return labels;
}

/** Series `indexes` of `batch` (a partition's share) as one message. */
export function encodeStreamColumns(
  tenant: string,
  partition: number,
  batch: SampleColumns<EncodableSeries>,
  indexes: readonly number[],
): Uint8Array {
  const { offsets, timestamps } = batch;
  const valueBytes = new Uint8Array(batch.values.buffer, batch.values.byteOffset, batch.values.byteLength);
  let samples = 0;
  let blocks = 0;
  for (const i of indexes) {
    samples += offsets[i + 1]! - offsets[i]!;
    blocks += batch.series[i]!.block.length;
  }
  // At most: the header, each series' block and two varints, each sample's varint and 8 bytes.
  const out = new ByteWriter(32 + 3 * tenant.length + blocks + 10 * indexes.length + 18 * samples);
  out.u8(STREAM_BATCH_VERSION);
  out.string(tenant);
  out.uvarint(partition);
  out.uvarint(indexes.length);
  out.uvarint(samples);
  for (const i of indexes) {
    const { block } = batch.series[i]!;
    out.uvarint(block.length);
    out.bytes(block);
    const from = offsets[i]!;
    const to = offsets[i + 1]!;
    out.uvarint(to - from);
    let previous = 0;
    for (let j = from; j < to; j++) {
      const t = timestamps[j]!;
      out.varint(j === from ? t : t - previous);
      previous = t;
    }
    if (LITTLE_ENDIAN) out.bytesOf(valueBytes, from * 8, to * 8);
    else for (let j = from; j < to; j++) for (let k = 7; k >= 0; k--) out.u8(valueBytes[j * 8 + k]!);
  }
  return out.finish();
}

/** Throws RangeError naming what is wrong: the message is not a stream batch. */
export function decodeStreamColumns<S extends { readonly labels: Labels }>(
  bytes: Uint8Array,
  options: DecodeColumnsOptions<S>,
): StreamColumns<S> {
  if (bytes[0] === JSON_OPEN_BRACE || bytes[0] === LEGACY_BINARY_VERSION) {
    const legacy = decodeLegacyStreamBatch(bytes);
    const kept = legacy.series
      .map((series) => ({ series, entry: options.entryOf(series.labels) }))
      .filter(({ entry }) => options.keep?.(entry) ?? true);
    const batch = columnsOf(
      kept.map(({ series }) => series),
      (_, i) => kept[i]!.entry,
    );
    return { tenant: legacy.tenant, partition: legacy.partition, batch };
  }
  if (bytes[0] !== STREAM_BATCH_VERSION) fail(`unknown format (first byte ${bytes[0] ?? "none"})`);
  const input = new ByteReader(bytes);
  try {
    input.u8();
    const tenant = input.string();
    const partition = input.uvarint();
    const seriesCount = input.uvarint();
    const total = input.uvarint();
    if (seriesCount > bytes.length) fail("more series than bytes");
    if (total * 9 > input.remaining) fail("more samples than bytes");
    const series: S[] = [];
    const offsets = new Uint32Array(seriesCount + 1);
    const timestamps = new Float64Array(total);
    const values = new Float64Array(total);
    const valueBytes = new Uint8Array(values.buffer);
    const makeEntry = (from: Uint8Array, start: number, end: number) =>
      options.entryOf(labelsOfBlock(from, start, end));
    let at = 0;
    for (let s = 0; s < seriesCount; s++) {
      const length = input.uvarint();
      if (length > input.remaining) fail("a label block past the end");
      const start = input.offset;
      input.offset += length;
      const entry = options.interner.intern(bytes, start, start + length, makeEntry)!;
      const count = input.uvarint();
      if (count * 9 > input.remaining) fail("more samples than bytes");
      if (options.keep !== undefined && !options.keep(entry)) {
        for (let i = 0; i < count; i++) input.uvarint();
        input.skip(count * 8);
        continue;
      }
      if (at + count > total) fail("more samples than the message declares");
      offsets[series.length] = at;
      let t = 0;
      for (let i = 0; i < count; i++) {
        t = i === 0 ? input.varint() : t + input.varint();
        if (!Number.isSafeInteger(t)) fail(`timestamp ${t} is not an integer`);
        timestamps[at + i] = t;
      }
      if (LITTLE_ENDIAN) input.bytesInto(count * 8, valueBytes, at * 8);
      else {
        const raw = input.bytes(count * 8);
        for (let i = 0; i < count * 8; i++) valueBytes[at * 8 + i] = raw[(i & ~7) + 7 - (i & 7)]!;
      }
      series.push(entry);
      at += count;
    }
    if (input.remaining !== 0) fail(`${input.remaining} bytes after the last series`);
    if (options.keep === undefined && at !== total) fail(`${at} samples, the message declares ${total}`);
    offsets[series.length] = at;
    const batch: SampleColumns<S> = {
      series,
      offsets: series.length === seriesCount ? offsets : offsets.slice(0, series.length + 1),
      timestamps: timestamps.subarray(0, at),
      values: values.subarray(0, at),
    };
    return { tenant, partition, batch };
  } catch (error) {
    if (error instanceof RangeError && error.message.startsWith("stream batch:")) throw error;
    fail(`truncated or malformed (${error instanceof Error ? error.message : String(error)})`);
  }
}

// The object forms: one object per sample, for the tests and for small batches (the cardinality alert).

/** The message of a batch given as objects (labels canonical). */
export function encodeStreamBatch(batch: StreamBatch): Uint8Array {
  const columns = columnsOf(batch.series, (labels) => ({ labels, block: encodeLabelBlock(labels) }));
  return encodeStreamColumns(
    batch.tenant,
    batch.partition,
    columns,
    columns.series.map((_, i) => i),
  );
}

/** A message as objects. Throws RangeError naming what is wrong: the message is not a stream batch. */
export function decodeStreamBatch(
  bytes: Uint8Array,
  options: { keep?: (labels: Labels) => boolean } = {},
): StreamBatch {
  const { keep } = options;
  const decoded = decodeStreamColumns(bytes, {
    interner: new SeriesInterner<{ labels: Labels }>({ maxEntries: Number.POSITIVE_INFINITY }),
    entryOf: (labels) => ({ labels }),
    ...(keep === undefined ? {} : { keep: (entry: { labels: Labels }) => keep(entry.labels) }),
  });
  return { tenant: decoded.tenant, partition: decoded.partition, series: seriesSamplesOf(decoded.batch) };
}
