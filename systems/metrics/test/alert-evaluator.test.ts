/**
 * Alerts off the stream (MT-07's third consumer, MT-08, MT-01's lag): the evaluator reads the
 * in-process stream into its own window — no hot writer runs at all, so the TSDB is never
 * read — evaluates Prometheus-format rules, walks pending → firing → resolved and POSTs
 * Alertmanager's webhook body to a real HTTP receiver; the time from the stream's ack of a
 * sample to the receiver holding the notification is measured against MT-01's 1 min. A
 * restarted evaluator replays a bounded window of the stream and fires an alert whose `for:`
 * had already elapsed at once, its `rate(…[5m])` rebuilt from the replay; with the notification
 * log it repeats the very notification its predecessor logged (same startsAt, same evaluation
 * time, so the same Idempotency-Key), without it a new one from the replay's steps.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { after, before, test } from "node:test";
import { InProcessStreamServer } from "@casebook/infra/stream/in-process-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import { systemClock } from "@casebook/kit/clock";
import { eventually } from "@casebook/lab/eventually";
import { AlertWebhook } from "../src/clients/alert-webhook.ts";
import { type AlertNotification, perAlertEvents } from "../src/domain/alert-notification.ts";
import { parseRuleFile, type RuleGroup } from "../src/domain/alert-rules.ts";
import type { AlertmanagerWebhook } from "../src/domain/alertmanager-payload.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { AlertLog } from "../src/store/alert-log.ts";
import { SampleStream } from "../src/store/sample-stream.ts";
import { startAlertEvaluator } from "../src/workers/alert-evaluator.ts";

let client: StreamClient;
let stream: SampleStream;
let receiver: Server;
let receiverUrl: string;
const received: Array<{ atMs: number; body: AlertmanagerWebhook }> = [];
/** Every evaluator started, stopped in after() too: a failed wait must not leave its loops running. */
const started: Array<{ stop(): Promise<void> }> = [];

before(async () => {
  client = new InProcessStreamServer().connect();
  stream = new SampleStream(client, { partitions: 2, retentionMs: 3_600_000, storage: "memory" });
  await stream.ensure();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ atMs: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      res.writeHead(200).end();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  const address = receiver.address() as { port: number };
  receiverUrl = `http://127.0.0.1:${address.port}/hook`;
});
after(async () => {
  await Promise.allSettled(started.map((e) => e.stop()));
  await Promise.allSettled([client.close(), new Promise((resolve) => receiver.close(resolve))]);
});

/** An evaluator on this file's stream (replaying 10 min), stopped after the file if a test does not. */
async function startEvaluator(
  groups: readonly RuleGroup[],
  notify: (notification: AlertNotification) => void,
  log?: AlertLog,
) {
  const evaluator = await startAlertEvaluator({
    client,
    groups,
    clock: systemClock,
    replayMs: 600_000,
    ...(log === undefined ? {} : { log }),
    notify,
    onError: (error) => assert.fail(String(error)),
  });
  started.push(evaluator);
  return evaluator;
}

function sample(name: string, labels: Record<string, string>, t: number, v: number) {
  return { labels: labelsFromRecord({ __name__: name, ...labels }), samples: [{ t, v }] };
}

function notificationsFor(alertname: string, status?: string) {
  return received.filter(
    (r) => r.body.groupLabels.alertname === alertname && (status === undefined || r.body.status === status),
  );
}

test("MT-08 an alert goes pending → firing → resolved from the stream alone, as Alertmanager's webhook body; MT-01 lag measured", async () => {
  const groups = parseRuleFile(
    `groups:
  - name: latency
    interval: 200ms
    rules:
      - alert: SlowApi
        expr: api_latency_seconds > 1
        for: 1s
        labels: { severity: page }
        annotations: { summary: "{{ $labels.instance }} answers in {{ $value }}s" }`,
    { defaultIntervalMs: 15_000 },
  );
  const webhook = new AlertWebhook({ url: receiverUrl, retryBaseMs: 50 });
  const evaluator = await startEvaluator(groups, (notification) => webhook.send(notification));
  try {
    await stream.publish("acme", [sample("api_latency_seconds", { instance: "a" }, Date.now(), 0.2)]);
    await stream.publish("acme", [sample("api_latency_seconds", { instance: "a" }, Date.now(), 2.5)]);
    const ackedAtMs = Date.now();
    await eventually(
      () => evaluator.alerts().some((a) => a.alertname === "SlowApi" && a.state === "pending"),
      {
        what: "the alert to be pending",
        timeoutMs: 30_000,
      },
    );
    const [firing] = await eventually(() => notificationsFor("SlowApi", "firing"), {
      what: "the firing notification",
      timeoutMs: 60_000,
      accept: (list) => list.length > 0,
    });
    const lagMs = firing!.atMs - ackedAtMs;
    console.log(
      `MT-01 lag: sample acked by the stream → firing notification received: ${lagMs} ms (for: 1s, interval 200ms)`,
    );
    assert.ok(lagMs < 60_000, `MT-01: alerts lag at most 1 min (${lagMs} ms)`);
    const body = firing!.body;
    assert.equal(notificationsFor("SlowApi")[0], firing, "nothing was sent while it was pending");
    assert.ok(
      firing!.atMs - Date.parse(body.alerts[0]!.startsAt) >= 1_000,
      "it fired only once for: had elapsed since it became active",
    );
    assert.equal(body.version, "4");
    assert.equal(body.receiver, "casebook-metrics");
    assert.deepEqual(body.groupLabels, { alertname: "SlowApi" });
    assert.equal(body.alerts.length, 1);
    const alert = body.alerts[0]!;
    assert.deepEqual(alert.labels, { alertname: "SlowApi", instance: "a", severity: "page", tenant: "acme" });
    assert.deepEqual(alert.annotations, { summary: "a answers in 2.5s" });
    assert.equal(alert.status, "firing");
    assert.equal(alert.endsAt, "0001-01-01T00:00:00Z");
    assert.match(alert.fingerprint, /^[0-9a-f]{16}$/);
    assert.deepEqual(body.commonLabels, alert.labels);

    await stream.publish("acme", [sample("api_latency_seconds", { instance: "a" }, Date.now(), 0.3)]);
    const [resolved] = await eventually(() => notificationsFor("SlowApi", "resolved"), {
      what: "the resolved notification",
      timeoutMs: 60_000,
      accept: (list) => list.length > 0,
    });
    assert.equal(resolved!.body.alerts[0]!.status, "resolved");
    assert.equal(resolved!.body.alerts[0]!.startsAt, alert.startsAt);
    assert.ok(Date.parse(resolved!.body.alerts[0]!.endsAt) >= Date.parse(alert.startsAt));
  } finally {
    await evaluator.stop();
    await webhook.close();
  }
});

test("MT-08 the evaluator's window holds only the series a rule's selector matches (a missing label read as empty), and alerts still fire from them", async () => {
  const groups = parseRuleFile(
    `groups:
  - name: held
    interval: 200ms
    rules:
      - alert: HeldDiskFull
        expr: held_disk_used_ratio{mount="/"} > 0.9
      - alert: HeldDown
        expr: held_up{env!="prod"} == 0`,
    { defaultIntervalMs: 15_000 },
  );
  const seen: AlertNotification[] = [];
  const evaluator = await startEvaluator(groups, (notification) => seen.push(notification));
  try {
    const t = Date.now();
    const noise = Array.from({ length: 40 }, (_, i) => sample("held_other_bytes", { i: String(i) }, t, i));
    await stream.publish("acme", [
      ...noise,
      sample("held_disk_used_ratio", { host: "h1", mount: "/" }, t, 0.95),
      sample("held_disk_used_ratio", { host: "h1", mount: "/data" }, t, 0.99),
      sample("held_up", { job: "a" }, t, 0),
      sample("held_up", { job: "b", env: "prod" }, t, 0),
    ]);
    const firing = (alertname: string) =>
      evaluator.alerts().filter((a) => a.alertname === alertname && a.state === "firing");
    await eventually(() => firing("HeldDiskFull").length > 0 && firing("HeldDown").length > 0, {
      what: "both alerts firing",
      timeoutMs: 30_000,
    });
    assert.deepEqual(
      firing("HeldDiskFull").map((a) => a.labels.mount),
      ["/"],
    );
    assert.deepEqual(
      firing("HeldDown").map((a) => a.labels.job),
      ["a"],
    );
    assert.equal(evaluator.seriesHeld, 2, "only disk{mount=/} and up{job=a} (no env: empty ≠ prod) are held");
  } finally {
    await evaluator.stop();
  }
});

/** A counter at rate 0.667/s for six minutes, an evaluator that fires on it, stopped and started again. */
async function restartScenario(metric: string, log: AlertLog | undefined) {
  const groups = parseRuleFile(
    `groups:
  - name: traffic
    interval: 250ms
    rules:
      - alert: BusyCounter
        expr: rate(${metric}[5m]) > 0.5
        for: 2m`,
    { defaultIntervalMs: 15_000 },
  );
  // Six minutes of a counter growing 10 per 15 s (rate 0.667/s), written now with its own timestamps.
  const now = Date.now();
  for (let i = 24; i >= 0; i--) {
    await stream.publish("acme", [sample(metric, { job: "api" }, now - i * 15_000, (24 - i) * 10)]);
  }
  const seen: AlertNotification[] = [];
  const start = () => startEvaluator(groups, (notification) => seen.push(notification), log);
  const first = await start();
  const firstFiring = await eventually(() => seen.find((n) => n.alertname === "BusyCounter"), {
    what: "the first evaluator's notification",
    timeoutMs: 30_000,
  });
  await first.stop();
  seen.length = 0;
  const restartedAtMs = Date.now();
  const second = await start();
  try {
    const again = await eventually(() => seen.find((n) => n.alertname === "BusyCounter"), {
      what: "the restarted evaluator's notification",
      timeoutMs: 30_000,
    });
    // Fired on its first evaluations, not 2 minutes later: `for:` came back from the replay.
    assert.ok(Date.now() - restartedAtMs < 60_000);
    assert.equal(again.payload.status, "firing");
    assert.ok(second.messagesRead >= 25, `replayed ${second.messagesRead} messages`);
    const startsAt = (n: AlertNotification) => Date.parse(n.payload.alerts[0]!.startsAt);
    assert.ok(startsAt(again) <= restartedAtMs - 120_000, "active for longer than for: before the restart");
    return { firstFiring, again, startsAt };
  } finally {
    await second.stop();
  }
}

test("MT-08 a restarted evaluator replays a bounded window: rate()[5m] and for: rebuilt, the alert fires at once", async () => {
  const { firstFiring, again, startsAt } = await restartScenario("requests_total", undefined);
  assert.ok(
    Math.abs(startsAt(again) - startsAt(firstFiring)) <= 60_000,
    `same activeAt within the replay's steps: ${firstFiring.payload.alerts[0]!.startsAt} vs ${again.payload.alerts[0]!.startsAt}`,
  );
});

test("MT-08 with the notification log, a restarted evaluator repeats the logged notification itself: same body, same Idempotency-Key", async () => {
  const log = new AlertLog(client, { windowMs: 660_000, storage: "memory" });
  const { firstFiring, again } = await restartScenario("logged_requests_total", log);
  // Not a new decision from the replay's steps: the very notification, alert by alert.
  assert.deepEqual(perAlertEvents(again), perAlertEvents(firstFiring));
  assert.equal(again.alerts[0]!.notifiedAtMs, firstFiring.alerts[0]!.notifiedAtMs);
});
