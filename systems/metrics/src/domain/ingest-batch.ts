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
    const sent = labelsFromPairs(entry.labels);
    const names = new Set(sent.map(([name]) => name));
    const labels = labelsFromPairs([...sent, ...options.standardLabels.filter(([name]) => !names.has(name))]);
    const problem = labelProblem(labels);
    if (problem) return { ok: false, field: `timeseries[${i}].labels`, reason: problem.reason };
    for (let j = 0; j < entry.samples.length; j++) {
      const { t, v } = entry.samples[j]!;
      if (!Number.isSafeInteger(t) || t < minT) {
        return {
          ok: false,
          field: `timeseries[${i}].samples[${j}].timestamp`,
          reason: `timestamp ${t} is not integer milliseconds after 2000-01-01`,
        };
      }
      if (typeof v !== "number")
        return { ok: false, field: `timeseries[${i}].samples[${j}].value`, reason: "value is not a number" };
    }
    if (entry.samples.length === 0) continue;
    samples += entry.samples.length;
    batch.push({ labels, samples: entry.samples });
  }
  return { ok: true, batch, samples };
}
