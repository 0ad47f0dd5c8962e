/**
 * The forms the sample stream carried before its columns (`stream-batch.ts`), still read so a
 * stream retained across an upgrade is read through: the first binary form (first byte `0xCB`:
 * a string table, then per series its label pairs as table indexes, varint time deltas and
 * big-endian float64 values) and the JSON form before it (first byte `{`). Each decodes to one
 * object per sample — they are met at most once per message retained at the upgrade.
 *
 * @example
 * decodeLegacyStreamBatch(bytes).series[0].samples[0].v;
 */
import { ByteReader } from "./byte-codec.ts";
import type { SeriesSamples } from "./head-block.ts";
import { LABEL_LIMITS, type Labels } from "./labels.ts";
import { STALE_NAN } from "./staleness.ts";

export interface StreamBatch {
  readonly tenant: string;
  readonly partition: number;
  readonly series: readonly SeriesSamples[];
}

/** First byte of the first binary form (the JSON form starts with `{`). */
export const LEGACY_BINARY_VERSION = 0xcb;
export const JSON_OPEN_BRACE = 0x7b;
export const MAX_LABEL_PAIRS = LABEL_LIMITS.maxLabels + 8;

export function fail(why: string): never {
  throw new RangeError(`stream batch: ${why}`);
}

/** A message of a legacy form (the caller checked its first byte), its series as objects. */
export function decodeLegacyStreamBatch(bytes: Uint8Array): StreamBatch {
  return bytes[0] === JSON_OPEN_BRACE ? decodeJsonStreamBatch(bytes) : decodeBinaryV1(bytes);
}

function decodeBinaryV1(bytes: Uint8Array): StreamBatch {
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
