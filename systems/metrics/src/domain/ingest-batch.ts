/**
 * The ingest's validation (MT-05): a decoded batch (remote-write or the agent's JSON) becomes
 * the head's input, or the first problem with the field that holds it
 * (`timeseries[3].labels`, `timeseries[0].samples[2].timestamp`). Labels follow Prometheus's
 * rules (`labels.ts`); empty values are dropped; the standard labels (the deployment's
 * `region`, `cluster`, …) are added where a series lacks them; timestamps are integer
 * milliseconds. Values may be any float64, NaN included — Prometheus itself sends NaN (a
 * summary with no observations) and StaleNaN (a series gone), and both must arrive intact.
 *
 * @example
 * const checked = validateBatch(request.series, { standardLabels: [["region", "eu"]] });
 * if (!checked.ok) throw errors.create("METRICS_INGEST_INVALID", { detail: checked.reason, fields: { field: checked.field } });
 */
import type { SeriesSamples } from "./head-block.ts";
import { type Labels, labelProblem, labelsFromPairs } from "./labels.ts";
import { labelsInSpan, type WriteRequestColumns } from "./remote-write.ts";
import type { SampleColumns } from "./sample-columns.ts";
import type { SeriesInterner } from "./series-interner.ts";

export interface BatchProblem {
  readonly ok: false;
  readonly field: string;
  readonly reason: string;
}

export interface CheckedBatch {
  readonly ok: true;
  readonly batch: SeriesSamples[];
  readonly samples: number;
}

/** Samples below this are refused: before 2000-01-01, a unit mistake (seconds for ms). */
export const MIN_TIMESTAMP_MS = 946_684_800_000;

/** The series' labels as stored — sorted, empty values dropped, standard labels added — or what is wrong. */
export function canonicalLabels(
  sent: ReadonlyArray<readonly [string, string]>,
  standardLabels: Labels,
): Labels | { problem: string } {
  // A label sent empty is absent (dropped first), so a standard label of its name is added.
  const given = labelsFromPairs(sent);
  const labels =
    standardLabels.length === 0
      ? given
      : labelsFromPairs([
          ...given,
          ...standardLabels.filter(([name]) => !given.some(([givenName]) => givenName === name)),
        ]);
  const problem = labelProblem(labels);
  return problem ? { problem: problem.reason } : labels;
}

function timestampProblem(i: number, j: number, t: number): BatchProblem {
  return {
    ok: false,
    field: `timeseries[${i}].samples[${j}].timestamp`,
    reason: `timestamp ${t} is not integer milliseconds after 2000-01-01`,
  };
}

export function validateBatch(
  series: ReadonlyArray<{
    labels: ReadonlyArray<readonly [string, string]>;
    samples: ReadonlyArray<{ t: number; v: number }>;
  }>,
  options: { standardLabels: Labels; minTimestampMs?: number },
): CheckedBatch | BatchProblem {
  const batch: SeriesSamples[] = [];
  let samples = 0;
  const minT = options.minTimestampMs ?? MIN_TIMESTAMP_MS;
  for (let i = 0; i < series.length; i++) {
    const entry = series[i]!;
    const labels = canonicalLabels(entry.labels, options.standardLabels);
    if ("problem" in labels) return { ok: false, field: `timeseries[${i}].labels`, reason: labels.problem };
    for (let j = 0; j < entry.samples.length; j++) {
      const { t, v } = entry.samples[j]!;
      if (!Number.isSafeInteger(t) || t < minT) return timestampProblem(i, j, t);
      if (typeof v !== "number")
        return { ok: false, field: `timeseries[${i}].samples[${j}].value`, reason: "value is not a number" };
    }
    if (entry.samples.length === 0) continue;
    samples += entry.samples.length;
    batch.push({ labels, samples: entry.samples });
  }
  return { ok: true, batch, samples };
}

export interface CheckedColumns<S extends { readonly labels: Labels }> {
  readonly ok: true;
  readonly batch: SampleColumns<S>;
  readonly samples: number;
}

/**
 * `validateBatch` for a remote-write request read in columns: each series found by its label
 * bytes in `interner` — the rules checked, the labels made canonical and `entryOf` called only
 * for a label set not met before — and every timestamp checked. Series without samples are
 * left out, as there.
 */
export function validateWriteColumns<S extends { readonly labels: Labels }>(
  request: WriteRequestColumns,
  interner: SeriesInterner<S>,
  entryOf: (labels: Labels) => S,
  options: { standardLabels: Labels; minTimestampMs?: number },
): CheckedColumns<S> | BatchProblem {
  const minT = options.minTimestampMs ?? MIN_TIMESTAMP_MS;
  const { bytes, labelSpans, offsets, timestamps } = request;
  const count = offsets.length - 1;
  let problem: string | undefined;
  const make = (from: Uint8Array, start: number, end: number): S | undefined => {
    let sent: Array<[string, string]>;
    try {
      sent = labelsInSpan(from, start, end);
    } catch (error) {
      problem = error instanceof RangeError ? error.message : String(error);
      return undefined;
    }
    const labels = canonicalLabels(sent, options.standardLabels);
    if ("problem" in labels) {
      problem = labels.problem;
      return undefined;
    }
    return entryOf(labels);
  };
  const series: S[] = [];
  // A series without samples adds no samples to the columns: leaving it out drops its offset only.
  const kept: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = labelSpans[2 * i]!;
    const end = labelSpans[2 * i + 1]!;
    const entry =
      request.scattered[i] === 1 ? make(bytes, start, end) : interner.intern(bytes, start, end, make);
    if (entry === undefined)
      return { ok: false, field: `timeseries[${i}].labels`, reason: problem ?? "invalid labels" };
    const from = offsets[i]!;
    const to = offsets[i + 1]!;
    for (let j = from; j < to; j++) {
      const t = timestamps[j]!;
      if (!(t >= minT) || !Number.isSafeInteger(t)) return timestampProblem(i, j - from, t);
    }
    if (from === to) continue;
    series.push(entry);
    kept.push(from);
  }
  const samples = offsets[count]!;
  kept.push(samples);
  const batch = {
    series,
    offsets: series.length === count ? offsets : Uint32Array.from(kept),
    timestamps,
    values: request.values,
  };
  return { ok: true, batch, samples };
}
