/**
 * What an application sends the agent (`POST /v1/records` on the agent's loopback port):
 * records already summed over the client's short flush — a counter's increment, a gauge's
 * value, a histogram's bucket counts — checked here before the aggregator sees them: metric
 * and label names by Prometheus's rules, a counter increment finite and not negative, a
 * histogram's bounds ascending with one count per bucket plus +Inf. The first problem names
 * its field (`records[3].labels`), and nothing of a refused body is applied.
 *
 * @example
 * const checked = checkAgentRecords(body.records);
 * if (!checked.ok) reply 400 naming checked.field
 */
import type { AgentRecord } from "./agent-aggregator.ts";
import { labelProblem, labelsFromRecord } from "./labels.ts";

export const MAX_AGENT_RECORDS_PER_REQUEST = 100_000;
export const MAX_HISTOGRAM_BUCKETS = 64;

export type CheckedRecords =
  | { readonly ok: true; readonly records: readonly AgentRecord[] }
  | { readonly ok: false; readonly field: string; readonly reason: string };

export function checkAgentRecords(records: readonly AgentRecord[]): CheckedRecords {
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const at = (field: string, reason: string): CheckedRecords => ({
      ok: false,
      field: `records[${i}].${field}`,
      reason,
    });
    const problem = labelProblem(labelsFromRecord({ ...r.labels, __name__: r.name }));
    if (problem) return at(problem.label === "__name__" ? "name" : "labels", problem.reason);
    if ("le" in r.labels || "agent_overflow" in r.labels)
      return at("labels", "le and agent_overflow are the agent's");
    if (r.kind === "counter" && !(Number.isFinite(r.value) && r.value >= 0))
      return at("value", "a counter's increment is a finite number >= 0");
    if (r.kind === "histogram") {
      if (r.bounds.length > MAX_HISTOGRAM_BUCKETS)
        return at("bounds", `at most ${MAX_HISTOGRAM_BUCKETS} bounds`);
      if (!r.bounds.every((b, k) => Number.isFinite(b) && (k === 0 || b > r.bounds[k - 1]!)))
        return at("bounds", "bounds are finite and strictly ascending");
      if (r.counts.length !== r.bounds.length + 1) return at("counts", "one count per bound, then +Inf's");
      if (!r.counts.every((c) => Number.isSafeInteger(c) && c >= 0))
        return at("counts", "counts are integers >= 0");
      if (!Number.isFinite(r.sum)) return at("sum", "sum is finite");
    }
  }
  return { ok: true, records };
}
