/**
 * MT-16's second half: when the hot writer refuses new series past a ceiling, the refusal is
 * itself published on the stream as a sample — `metrics_cardinality_refused_series{metric,
 * limit}`, the count refused in that message — so it is stored like any metric (queryable)
 * and the alert evaluator, which reads only the stream, raises `CardinalityLimitReached` to
 * the owning tenant (the alert carries its `tenant` label) through the same webhook as every
 * alert. The refusal metric itself is never reported again (no loop), and its timestamps
 * only grow per series (a repeat in one millisecond moves one on).
 *
 * @example
 * const reporter = new CardinalityReporter(sampleStream, systemClock);
 * reporter.report("acme", limited); // publishes; failures go to onError, never to the writer
 */
import type { Clock } from "@casebook/kit/clock";
import { parseRuleFile, type RuleGroup } from "../domain/alert-rules.ts";
import type { AppendPlan } from "../domain/head-block.ts";
import { labelsFromRecord, metricNameOf } from "../domain/labels.ts";
import type { SampleStream } from "../store/sample-stream.ts";

export const REFUSED_SERIES_METRIC = "metrics_cardinality_refused_series";

/** The built-in rule group every evaluator runs next to the operator's rule files. */
export function cardinalityRules(intervalMs: number): RuleGroup[] {
  return parseRuleFile(
    `groups:
  - name: casebook-cardinality
    rules:
      - alert: CardinalityLimitReached
        expr: sum by (metric, limit) (sum_over_time(${REFUSED_SERIES_METRIC}[5m])) > 0
        labels:
          severity: warning
          audience: tenant-owner
        annotations:
          summary: "{{ $labels.metric }}: {{ $value }} new series refused in 5 min by the {{ $labels.limit }} ceiling"
          action: "Drop the high-cardinality label (a user id?) from this metric; per-user detail belongs in logs or traces."`,
    { defaultIntervalMs: intervalMs },
  );
}

export class CardinalityReporter {
  readonly #stream: SampleStream;
  readonly #clock: Clock;
  readonly #lastT = new Map<string, number>();
  readonly #onError: (error: unknown) => void;

  constructor(stream: SampleStream, clock: Clock, onError: (error: unknown) => void) {
    this.#stream = stream;
    this.#clock = clock;
    this.#onError = onError;
  }

  report(tenant: string, limited: AppendPlan["limited"]): void {
    const counts = new Map<string, { metric: string; limit: string; count: number }>();
    for (const entry of limited) {
      const metric = metricNameOf(entry.labels) ?? "";
      if (metric === REFUSED_SERIES_METRIC) continue;
      const key = `${metric}\u0000${entry.code}`;
      const found = counts.get(key) ?? { metric, limit: entry.code, count: 0 };
      found.count++;
      counts.set(key, found);
    }
    if (counts.size === 0) return;
    const series = [...counts.values()].map(({ metric, limit, count }) => {
      const id = `${tenant}\u0000${metric}\u0000${limit}`;
      const t = Math.max(this.#clock.nowMs(), (this.#lastT.get(id) ?? 0) + 1);
      this.#lastT.set(id, t);
      if (this.#lastT.size > 10_000) this.#lastT.delete(this.#lastT.keys().next().value!);
      return {
        labels: labelsFromRecord({ __name__: REFUSED_SERIES_METRIC, metric, limit: limit.toLowerCase() }),
        samples: [{ t, v: count }],
      };
    });
    this.#stream.publish(tenant, series).catch(this.#onError);
  }
}
