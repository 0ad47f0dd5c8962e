/**
 * One partition's share of an accepted batch as it travels on the stream (MT-07): the tenant,
 * the partition and its series with their samples, as JSON bytes. Non-finite values are spelt
 * out (`"NaN"`, `"+Inf"`, `"-Inf"`, `"stale"`) so a staleness marker keeps its exact bits
 * through the stream (JSON has no NaN). Every consumer — hot writer, alert evaluator — decodes
 * with `decodeStreamBatch`, which checks the shape, so a foreign message is a clear error.
 *
 * @example
 * const bytes = encodeStreamBatch({ tenant: "acme", partition: 3, series });
 * decodeStreamBatch(bytes).series[0].samples[0].v; // the same float64 bits
 */
import type { SeriesSamples } from "./head-block.ts";
import { LABEL_LIMITS, type Labels } from "./labels.ts";
import { isStaleNaN, STALE_NAN } from "./staleness.ts";

export interface StreamBatch {
  readonly tenant: string;
  readonly partition: number;
  readonly series: readonly SeriesSamples[];
}

type WireValue = number | "NaN" | "+Inf" | "-Inf" | "stale";

interface WireBatch {
  tenant: string;
  partition: number;
  series: Array<{ labels: Array<[string, string]>; t: number[]; v: WireValue[] }>;
}

function toWire(v: number): WireValue {
  if (Number.isFinite(v)) return v;
  if (isStaleNaN(v)) return "stale";
  if (Number.isNaN(v)) return "NaN";
  return v > 0 ? "+Inf" : "-Inf";
}

const FROM_WIRE: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  "+Inf": Number.POSITIVE_INFINITY,
  "-Inf": Number.NEGATIVE_INFINITY,
  stale: STALE_NAN,
};

export function encodeStreamBatch(batch: StreamBatch): Uint8Array {
  const wire: WireBatch = {
    tenant: batch.tenant,
    partition: batch.partition,
    series: batch.series.map((s) => ({
      labels: s.labels.map(([n, v]) => [n, v]),
      t: s.samples.map((x) => x.t),
      v: s.samples.map((x) => toWire(x.v)),
    })),
  };
  return new TextEncoder().encode(JSON.stringify(wire));
}

function fail(why: string): never {
  throw new RangeError(`stream batch: ${why}`);
}

function fromWire(v: unknown): number {
  if (typeof v === "number") return v;
  const special = typeof v === "string" ? FROM_WIRE[v] : undefined;
  if (special === undefined) fail(`value ${JSON.stringify(v)} is not a number`);
  return special;
}

function labelsOf(raw: unknown): Labels {
  if (!Array.isArray(raw) || raw.length > LABEL_LIMITS.maxLabels + 8)
    fail("labels must be an array of pairs");
  return raw.map((pair: unknown) => {
    if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "string")
      fail("a label must be a [name, value] pair of strings");
    return [pair[0], pair[1]] as const;
  });
}

/** Throws RangeError naming what is wrong: the message is not a stream batch. */
export function decodeStreamBatch(bytes: Uint8Array): StreamBatch {
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
