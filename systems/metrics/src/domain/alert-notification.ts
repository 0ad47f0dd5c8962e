/**
 * One notification the evaluator hands to a sink (plain HTTP or the webhooks system): the
 * Alertmanager body for a rule's alerts at one evaluation, with what the sinks need beside it
 * — the group and rule it came from, and per alert the time of the notification it belongs to
 * (`notifiedAtMs`: the evaluation that decided it; a repeat after a restart keeps the
 * original's).
 *
 * The webhooks sink publishes one event per alert (`perAlertEvents`) under an Idempotency-Key
 * derived from (group, rule, fingerprint, status, notifiedAtMs): a retry of the publish, or
 * the repeat a restarted evaluator sends of a notification its predecessor logged, carries the
 * same key and the same body, so the webhooks service stores it once and delivers it once.
 * One alert per event (Alertmanager's `group_by: ['...']`) because a repeat may regroup: the
 * key must name one alert's notification, not a batch whose members can change.
 *
 * @example
 * for (const { key, status, payload } of perAlertEvents(notification)) publish({ type: `metrics.alert.${status}`, payload, idempotencyKey: key });
 */
import { createHash } from "node:crypto";
import type { AlertToSend } from "./alert-state.ts";
import type { AlertmanagerWebhook } from "./alertmanager-payload.ts";

export interface AlertNotification {
  readonly tenant: string;
  readonly group: string;
  /** The rule's index in its group (two rules may share an alert name). */
  readonly ruleIndex: number;
  readonly alertname: string;
  /** What was decided, alert by alert, in the payload's order. */
  readonly alerts: readonly AlertToSend[];
  readonly payload: AlertmanagerWebhook;
}

export interface AlertEvent {
  readonly key: string;
  readonly status: "firing" | "resolved";
  readonly payload: AlertmanagerWebhook;
}

/** `mta-` + 64 hex digits: inside the Idempotency-Key rule (visible ASCII, ≤ 255). */
export function alertIdempotencyKey(input: {
  group: string;
  alertname: string;
  fingerprint: string;
  status: "firing" | "resolved";
  notifiedAtMs: number;
}): string {
  const identity = JSON.stringify([
    input.group,
    input.alertname,
    input.fingerprint,
    input.status,
    input.notifiedAtMs,
  ]);
  return `mta-${createHash("sha256").update(identity).digest("hex")}`;
}

/** One Alertmanager body per alert (the notification's own fields, that alert alone) with its key. */
export function perAlertEvents(notification: AlertNotification): AlertEvent[] {
  const { payload } = notification;
  return payload.alerts.map((alert, i) => {
    const decided = notification.alerts[i]!;
    return {
      key: alertIdempotencyKey({
        group: notification.group,
        alertname: notification.alertname,
        fingerprint: alert.fingerprint,
        status: alert.status,
        notifiedAtMs: decided.notifiedAtMs,
      }),
      status: alert.status,
      payload: {
        ...payload,
        status: alert.status,
        commonLabels: { ...alert.labels },
        commonAnnotations: { ...alert.annotations },
        alerts: [alert],
      },
    };
  });
}
