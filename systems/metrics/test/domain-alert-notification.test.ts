/**
 * What makes a notification recognisable across retries and restarts, deterministically (a
 * manual time line, no stream): the Idempotency-Key of one alert's notification — `mta-` and
 * 64 hex digits, the same for the same (group, rule, fingerprint, status, evaluation time) and
 * different when any of them differs; one Alertmanager body per alert; a restarted rule state
 * that restores the logged notification repeats it once, exactly, then resends and resolves on
 * its own schedule; a logged resolve ends the episode the replay rebuilt; the log's records
 * keep NaN and ±Inf.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type AlertNotification,
  alertIdempotencyKey,
  perAlertEvents,
} from "../src/domain/alert-notification.ts";
import { parseRuleFile } from "../src/domain/alert-rules.ts";
import { AlertRuleState, type AlertToSend } from "../src/domain/alert-state.ts";
import { alertmanagerPayload } from "../src/domain/alertmanager-payload.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { decodeLogged, encodeLogged } from "../src/store/alert-log.ts";

const [GROUP] = parseRuleFile(
  `groups:
  - name: rooms
    interval: 1s
    rules:
      - alert: HotRoom
        expr: room_celsius > 30
        for: 2s
        annotations: { summary: "{{ $labels.room }} at {{ $value }}" }`,
  { defaultIntervalMs: 15_000 },
);
const RULE = GROUP!.rules[0]!;
const RESEND_MS = 10_000;
const hot = (room: string, v: number) => [
  { labels: labelsFromRecord({ __name__: "room_celsius", room }), v },
];

test("MT-08 the Idempotency-Key names one alert's notification: stable, and different when any part differs", () => {
  const base = {
    group: "rooms",
    alertname: "HotRoom",
    fingerprint: "0123456789abcdef",
    status: "firing",
    notifiedAtMs: 1_000,
  } as const;
  const key = alertIdempotencyKey(base);
  assert.match(key, /^mta-[0-9a-f]{64}$/);
  assert.equal(alertIdempotencyKey({ ...base }), key);
  const variants = [
    { ...base, group: "rooms2" },
    { ...base, alertname: "ColdRoom" },
    { ...base, fingerprint: "fedcba9876543210" },
    { ...base, status: "resolved" as const },
    { ...base, notifiedAtMs: 1_001 },
  ];
  assert.equal(new Set([key, ...variants.map(alertIdempotencyKey)]).size, 6);
});

test("MT-08 a notification of two alerts becomes two Alertmanager bodies, one alert each, each with its own key", () => {
  const state = new AlertRuleState(RULE, { resendMs: RESEND_MS });
  const vector = [...hot("lab", 35), ...hot("hall", 40)];
  state.evaluate(vector, 0);
  const alerts = state.evaluate(vector, 2_000);
  assert.equal(alerts.length, 2);
  const notification: AlertNotification = {
    tenant: "acme",
    group: "rooms",
    ruleIndex: 0,
    alertname: "HotRoom",
    alerts,
    payload: alertmanagerPayload({
      receiver: "r",
      alertname: "HotRoom",
      alerts,
      externalUrl: "",
      generatorUrl: "g",
    }),
  };
  const events = perAlertEvents(notification);
  assert.equal(events.length, 2);
  assert.notEqual(events[0]!.key, events[1]!.key);
  for (const [i, event] of events.entries()) {
    assert.equal(event.status, "firing");
    assert.deepEqual(event.payload.alerts, [notification.payload.alerts[i]]);
    assert.deepEqual(event.payload.commonLabels, notification.payload.alerts[i]!.labels);
    assert.deepEqual(event.payload.groupLabels, { alertname: "HotRoom" });
  }
});

test("MT-08 a restored notification is repeated once, exactly as logged; then resends and the resolve follow their own schedule", () => {
  const before = new AlertRuleState(RULE, { resendMs: RESEND_MS });
  before.evaluate(hot("lab", 35), 0);
  const [logged] = before.evaluate(hot("lab", 35), 2_000);
  assert.equal(logged?.notifiedAtMs, 2_000);

  // The restarted state: a quiet replay at other steps (its activeAt comes out 500 ms later), then the log.
  const after = new AlertRuleState(RULE, { resendMs: RESEND_MS });
  for (const t of [500, 1_500, 2_500, 3_500]) after.evaluate(hot("lab", 36), t, { quiet: true });
  after.restore(logged!);
  assert.deepEqual(after.evaluate(hot("lab", 36), 4_000), [logged], "the logged notification, as it was");
  assert.deepEqual(after.evaluate(hot("lab", 36), 5_000), [], "repeated once only");
  const [resent] = after.evaluate(hot("lab", 36), 12_000);
  assert.equal(resent?.notifiedAtMs, 12_000, "the resend is due from the logged send");
  assert.equal(resent?.startsAtMs, 0, "startsAt from the log, not from the replay's steps");
  const [resolved] = after.evaluate([], 13_000);
  assert.equal(resolved?.status, "resolved");
  assert.equal(resolved?.startsAtMs, 0);
  assert.equal(resolved?.endsAtMs, 13_000);
});

test("MT-08 a logged resolve ends the episode the replay rebuilt; a later one starts afresh", () => {
  const state = new AlertRuleState(RULE, { resendMs: RESEND_MS });
  for (const t of [0, 1_000, 2_000, 3_000]) state.evaluate(hot("lab", 35), t, { quiet: true });
  const [firing] = state.alerts;
  assert.equal(firing?.state, "firing");
  state.restore({
    status: "resolved",
    labels: firing!.labels,
    annotations: {},
    fingerprint: firing!.fingerprint,
    startsAtMs: 0,
    endsAtMs: 3_500,
    value: 35,
    notifiedAtMs: 3_500,
  });
  assert.equal(state.alerts.length, 0);
  assert.deepEqual(state.evaluate(hot("lab", 35), 4_000), [], "pending again, not firing at once");
});

test("the log's records keep NaN and ±Inf values", () => {
  const alert = (value: number): AlertToSend => ({
    status: "firing",
    labels: { alertname: "X" },
    annotations: {},
    fingerprint: "f",
    startsAtMs: 1,
    endsAtMs: undefined,
    value,
    notifiedAtMs: 2,
  });
  const record = {
    tenant: "t",
    group: "g",
    ruleIndex: 0,
    alertname: "X",
    alerts: [alert(Number.NaN), alert(Infinity), alert(-Infinity), alert(0.1)],
  };
  const back = decodeLogged(encodeLogged(record));
  assert.deepEqual(
    back.alerts.map((a) => a.value),
    [Number.NaN, Infinity, -Infinity, 0.1],
  );
  assert.deepEqual({ ...back, alerts: [] }, { ...record, alerts: [] });
});
