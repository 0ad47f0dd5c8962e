/**
 * One alerting rule's state across evaluations, as Prometheus keeps it: every series the
 * expression returns is an alert (its labels, minus the metric name, plus the rule's labels
 * and `alertname`); new → `pending` at that evaluation (`activeAt`), `firing` once it has been
 * active for the rule's `for:`, `resolved` at the first evaluation that no longer returns it
 * (a pending alert that disappears is just forgotten). Annotations are expanded with
 * `{{ $labels.name }}`, `{{ $value }}` (and `$labels`/`$value` without braces' spaces).
 *
 * `evaluate` answers the alerts to send: those that turned firing or resolved now, and the
 * firing ones again every `resendMs` (Alertmanager forgets an alert not re-sent). Each carries
 * `notifiedAtMs`, the evaluation that decided it: with the group, rule, fingerprint and status
 * it names one notification (`alert-notification.ts` derives the Idempotency-Key from them).
 *
 * `restore` puts back what a previous evaluator logged it notified last for an alert (the
 * notification log, `store/alert-log.ts`): a firing one is firing again with its logged
 * startsAt, and the next live evaluation sends that same notification once more — the same
 * `notifiedAtMs` and content, so a receiver that dedupes by key (the webhooks system) holds it
 * once whether or not the previous process got it out — unless a resend is due anyway.
 *
 * @example
 * const state = new AlertRuleState(rule, { resendMs: 60_000 });
 * state.evaluate(vector, nowMs); // [{ status: "firing", labels, annotations, startsAt, … }]
 */
import type { AlertRule } from "./alert-rules.ts";
import { labelsToRecord, METRIC_NAME, seriesKey } from "./labels.ts";
import type { InstantVector } from "./promql-values.ts";

export type AlertStatus = "pending" | "firing" | "resolved";

export interface ActiveAlert {
  readonly fingerprint: string;
  readonly labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  state: AlertStatus;
  value: number;
  /** When the expression first returned it (ms). */
  readonly activeAtMs: number;
  firedAtMs: number | undefined;
  resolvedAtMs: number | undefined;
  lastSentMs: number | undefined;
  /** The last notification decided for it (sent, or logged by a previous evaluator). */
  lastSent: AlertToSend | undefined;
  /** Restored from the log: send `lastSent` again at the next live evaluation. */
  repeat: boolean;
}

export interface AlertToSend {
  readonly status: "firing" | "resolved";
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly fingerprint: string;
  /** When it started firing's condition (activeAt, as Prometheus's startsAt). */
  readonly startsAtMs: number;
  readonly endsAtMs: number | undefined;
  readonly value: number;
  /** The evaluation that decided this notification (a repeat keeps the original's). */
  readonly notifiedAtMs: number;
}

/** Prometheus's template subset used by most rule files: `{{ $labels.x }}`, `{{ $value }}`. */
export function expandTemplate(
  text: string,
  labels: Readonly<Record<string, string>>,
  value: number,
): string {
  return text.replace(/\{\{\s*\$(labels\.([a-zA-Z_][a-zA-Z0-9_]*)|value)\s*\}\}/g, (_m, what, name) =>
    what === "value" ? String(value) : (labels[name] ?? ""),
  );
}

export class AlertRuleState {
  readonly rule: AlertRule;
  readonly #resendMs: number;
  readonly #active = new Map<string, ActiveAlert>();

  constructor(rule: AlertRule, options: { resendMs: number }) {
    this.rule = rule;
    this.#resendMs = options.resendMs;
  }

  get alerts(): readonly ActiveAlert[] {
    return [...this.#active.values()];
  }

  /** Applies one evaluation's result at `nowMs`; returns what to notify (empty with `quiet`). */
  evaluate(vector: InstantVector, nowMs: number, options: { quiet?: boolean } = {}): AlertToSend[] {
    const seen = new Set<string>();
    for (const sample of vector) {
      const labels: Record<string, string> = labelsToRecord(sample.labels);
      delete labels[METRIC_NAME];
      const seriesLabels = { ...labels };
      Object.assign(labels, this.rule.labels, { alertname: this.rule.alert });
      const fingerprint = seriesKey(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      seen.add(fingerprint);
      const annotations: Record<string, string> = {};
      for (const [name, text] of Object.entries(this.rule.annotations)) {
        annotations[name] = expandTemplate(text, seriesLabels, sample.v);
      }
      const existing = this.#active.get(fingerprint);
      if (existing === undefined || existing.state === "resolved") {
        this.#active.set(fingerprint, {
          fingerprint,
          labels,
          annotations,
          state: "pending",
          value: sample.v,
          activeAtMs: nowMs,
          firedAtMs: undefined,
          resolvedAtMs: undefined,
          lastSentMs: undefined,
          lastSent: undefined,
          repeat: false,
        });
      } else {
        existing.value = sample.v;
        existing.annotations = annotations;
      }
    }
    const toSend: AlertToSend[] = [];
    for (const [fingerprint, alert] of this.#active) {
      if (!seen.has(fingerprint)) {
        if (alert.state === "pending") {
          this.#active.delete(fingerprint);
          continue;
        }
        if (alert.state === "firing") {
          alert.state = "resolved";
          alert.resolvedAtMs = nowMs;
          alert.lastSentMs = undefined;
        }
      } else if (alert.state === "pending" && nowMs - alert.activeAtMs >= this.rule.forMs) {
        alert.state = "firing";
        alert.firedAtMs = nowMs;
      }
      if (alert.state === "pending") continue;
      const due = alert.lastSentMs === undefined || nowMs - alert.lastSentMs >= this.#resendMs;
      if (!options.quiet && due && !(alert.state === "resolved" && alert.lastSentMs !== undefined)) {
        const decided: AlertToSend = {
          status: alert.state,
          labels: alert.labels,
          annotations: alert.annotations,
          fingerprint,
          startsAtMs: alert.activeAtMs,
          endsAtMs: alert.resolvedAtMs,
          value: alert.value,
          notifiedAtMs: nowMs,
        };
        toSend.push(decided);
        alert.lastSentMs = nowMs;
        alert.lastSent = decided;
        alert.repeat = false;
      } else if (!options.quiet && alert.repeat && alert.lastSent !== undefined) {
        // A restored notification, sent again as it was: same key, same body.
        toSend.push(alert.lastSent);
        alert.repeat = false;
      }
      // A resolved alert is told once, then forgotten.
      if (alert.state === "resolved" && (alert.lastSentMs !== undefined || options.quiet))
        this.#active.delete(fingerprint);
    }
    return toSend;
  }

  /**
   * Applies the last notification a previous evaluator logged for one alert, after the quiet
   * replay rebuilt the rest: firing → firing with the logged startsAt, repeated at the next
   * live evaluation; resolved → that episode is over (a rebuilt alert of it is dropped).
   */
  restore(sent: AlertToSend): void {
    const existing = this.#active.get(sent.fingerprint);
    if (sent.status === "resolved") {
      if (existing !== undefined && existing.activeAtMs <= (sent.endsAtMs ?? sent.notifiedAtMs))
        this.#active.delete(sent.fingerprint);
      return;
    }
    this.#active.set(sent.fingerprint, {
      fingerprint: sent.fingerprint,
      labels: sent.labels,
      annotations: sent.annotations,
      state: "firing",
      value: sent.value,
      activeAtMs: sent.startsAtMs,
      firedAtMs: existing?.firedAtMs ?? sent.notifiedAtMs,
      resolvedAtMs: undefined,
      lastSentMs: sent.notifiedAtMs,
      lastSent: sent,
      repeat: true,
    });
  }
}
