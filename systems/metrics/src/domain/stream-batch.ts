/**
 * One partition's share of an accepted batch as it travels on the stream (MT-07): the tenant,
 * the partition and its series with their samples, in a compact binary form that every consumer
 * — hot writer, rollup builder, alert evaluator — decodes with `decodeStreamBatch`, each on its
 * own, for every message. So decoding is built to be cheap:
 *
 * - a version byte (`0xCB`, never `{`), the tenant, the partition;
 * - a string table: every distinct label name and value once (a node's 100 series share a few
 *   dozen strings), so a series' labels are small indexes and each string is decoded once;
 * - per series: its label pairs as table indexes, its sample count, the timestamps as a first
 *   value and zig-zag varint deltas, the values as raw float64 bits (a staleness marker keeps
 *   its exact NaN payload; no text, no special spellings).
 *
 * A message in the JSON form this stream carried before (first byte `{`) still decodes, so a
 * stream retained across the upgrade is read through. The decoder checks the shape, so a
 * foreign message is a clear RangeError naming what is wrong, never a half-read batch.
 *
 * @example
 * const bytes = encodeStreamBatch({ tenant: "acme", partition: 3, series });
 * decodeStreamBatch(bytes).series[0].samples[0].v; // the same float64 bits
 */
import { ByteReader, ByteWriter } from "./byte-codec.ts";
import type { SeriesSamples } from "./head-block.ts";
import { LABEL_LIMITS, type Labels } from "./labels.ts";
import { STALE_NAN } from "./staleness.ts";

export interface StreamBatch {
  readonly tenant: string;
  readonly partition: number;
  readonly series: readonly SeriesSamples[];
}

/** First byte of the binary form (the JSON form starts with `{`). */
export const STREAM_BATCH_VERSION = 0xcb;
const JSON_OPEN_BRACE = 0x7b;
const MAX_LABEL_PAIRS = LABEL_LIMITS.maxLabels + 8;

export function encodeStreamBatch(batch: StreamBatch): Uint8Array {
  const table = new Map<string, number>();
  const indexOf = (text: string): number => {
    let index = table.get(text);
    if (index === undefined) {
      index = table.size;
      table.set(text, index);
    }
    return index;
  };
  const body = new ByteWriter();
  body.uvarint(batch.series.length);
  for (const { labels, samples } of batch.series) {
    body.uvarint(labels.length);
    for (const [name, value] of labels) {
      body.uvarint(indexOf(name));
      body.uvarint(indexOf(value));
    }
    body.uvarint(samples.length);
    let previous = 0;
    for (const [i, { t }] of samples.entries()) {
      body.varint(i === 0 ? t : t - previous);
      previous = t;
    }
    for (const { v } of samples) body.f64(v);
  }
  const out = new ByteWriter();
  out.u8(STREAM_BATCH_VERSION);
  out.string(batch.tenant);
  out.uvarint(batch.partition);
  out.uvarint(table.size);
  for (const text of table.keys()) out.string(text);
  out.bytes(body.finish());
  return out.finish();
}

function fail(why: string): never {
  throw new RangeError(`stream batch: ${why}`);
}

/**
 * Throws RangeError naming what is wrong: the message is not a stream batch. With `keep`, a
 * series it refuses is left out, its samples stepped over unread (the shape is still checked).
 */
export function decodeStreamBatch(
  bytes: Uint8Array,
  options: { keep?: (labels: Labels) => boolean } = {},
): StreamBatch {
  if (bytes[0] === JSON_OPEN_BRACE) {
    const batch = decodeJsonStreamBatch(bytes);
    const { keep } = options;
    return keep === undefined ? batch : { ...batch, series: batch.series.filter((s) => keep(s.labels)) };
  }
  if (bytes[0] !== STREAM_BATCH_VERSION) fail(`unknown format (first byte ${bytes[0] ?? "none"})`);
  const input = new ByteReader(bytes);
  try {
    input.u8();
    const tenant = input.string();
    const partition = input.uvarint();
    const strings = new Array<string>(input.uvarint());
    if (strings.length > bytes.length) fail("string table longer than the message");
    for (let i = 0; i < strings.length; i++) strings[i] = input.string();
    const stringAt = (index: number): string => strings[index] ?? fail(`string ${index} is not in the table`);
    const seriesCount = input.uvarint();
    if (seriesCount > bytes.length) fail("more series than bytes");
    const series: SeriesSamples[] = [];
    for (let s = 0; s < seriesCount; s++) {
      const pairs = input.uvarint();
      if (pairs > MAX_LABEL_PAIRS) fail("labels must be an array of pairs");
      const labels: Array<readonly [string, string]> = [];
      for (let l = 0; l < pairs; l++) labels.push([stringAt(input.uvarint()), stringAt(input.uvarint())]);
      const count = input.uvarint();
      if (count * 9 > input.remaining) fail("more samples than bytes");
      if (options.keep !== undefined && !options.keep(labels as Labels)) {
        for (let i = 0; i < count; i++) input.uvarint();
        input.bytes(count * 8);
        continue;
      }
      const times = new Array<number>(count);
      let t = 0;
      for (let i = 0; i < count; i++) {
        t = i === 0 ? input.varint() : t + input.varint();
        if (!Number.isSafeInteger(t)) fail(`timestamp ${t} is not an integer`);
        times[i] = t;
      }
      // Each sample made whole with its value (a NaN written into an existing field may lose
      // its payload: the staleness marker must keep its bits).
      const samples = new Array<{ t: number; v: number }>(count);
      for (let i = 0; i < count; i++) samples[i] = { t: times[i]!, v: input.f64() };
      series.push({ labels: labels as Labels, samples });
    }
    if (input.remaining !== 0) fail(`${input.remaining} bytes after the last series`);
    return { tenant, partition, series };
  } catch (error) {
    if (error instanceof RangeError && error.message.startsWith("stream batch:")) throw error;
    fail(`truncated or malformed (${error instanceof Error ? error.message : String(error)})`);
  }
}

// The JSON form the stream carried before the binary one (non-finite values spelt out).

type WireValue = number | "NaN" | "+Inf" | "-Inf" | "stale";

interface WireBatch {
  tenant: string;
  partition: number;
  series: Array<{ labels: Array<[string, string]>; t: number[]; v: WireValue[] }>;
}

const FROM_WIRE: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  "+Inf": Number.POSITIVE_INFINITY,
  "-Inf": Number.NEGATIVE_INFINITY,
  stale: STALE_NAN,
};

function fromWire(v: unknown): number {
  if (typeof v === "number") return v;
  const special = typeof v === "string" ? FROM_WIRE[v] : undefined;
  if (special === undefined) fail(`value ${JSON.stringify(v)} is not a number`);
  return special;
}

function labelsOf(raw: unknown): Labels {
  if (!Array.isArray(raw) || raw.length > MAX_LABEL_PAIRS) fail("labels must be an array of pairs");
  return raw.map((pair: unknown) => {
    if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "string")
      fail("a label must be a [name, value] pair of strings");
    return [pair[0], pair[1]] as const;
  });
}

function decodeJsonStreamBatch(bytes: Uint8Array): StreamBatch {
  let wire: Partial<WireBatch>;
  try {
    wire = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    fail("not JSON");
  }
  if (
    typeof wire?.tenant !== "string" ||
    !Number.isSafeInteger(wire.partition) ||
    !Array.isArray(wire.series)
  )
    fail("needs tenant, partition and series");
  const series = wire.series.map((s) => {
    if (!Array.isArray(s?.t) || !Array.isArray(s.v) || s.t.length !== s.v.length)
      fail("a series needs t and v of one length");
    return {
      labels: labelsOf(s.labels),
      samples: s.t.map((t, i) => {
        if (!Number.isSafeInteger(t)) fail(`timestamp ${JSON.stringify(t)} is not an integer`);
        return { t, v: fromWire(s.v[i]) };
      }),
    };
  });
  return { tenant: wire.tenant, partition: wire.partition as number, series };
}
