/**
 * Alerts through the webhooks system, end to end, every service a real process on the
 * machine's PostgreSQL (a fresh schema each) and a private nats-server: webhooks with its
 * admin API; `@casebook/webhooks/client` makes a tenant and subscribes a receiver (this
 * process) to `metrics.alert.*`; metrics runs a rule file with WEBHOOKS_URL and the tenant's
 * key. A rule fires → the receiver gets Alertmanager's v4 body exactly once, as the `data` of
 * a Standard Webhooks request the reference library verifies. The metrics process is then
 * stopped and started again while the alert still fires: the restarted evaluator replays the
 * stream, restores the logged notification and publishes it again under the same
 * Idempotency-Key — the webhooks service answers `duplicate` (counted on the new process's
 * /metrics) and nothing reaches the receiver twice. The condition clears → one resolved body.
 * And a notification caught mid-way: the alert fires while the webhooks service is down (the
 * notification is logged, its publishes fail), metrics is stopped, both come back: the
 * restarted evaluator publishes it from its log — delivered exactly once, not lost.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { eventually } from "@casebook/lab/eventually";
import { type Received, startMisbehavingServer } from "@casebook/lab/misbehaving-http-server";
import { startServerProcess } from "@casebook/lab/server-process";
import { spawnNats } from "@casebook/lab/spawn-nats";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { WebhooksAdminClient, WebhooksClient } from "@casebook/webhooks/client";
import { Webhook } from "standardwebhooks";
import type { AlertmanagerWebhook } from "../src/domain/alertmanager-payload.ts";

const METRICS_ENTRY = new URL("../src/main.ts", import.meta.url);
const WEBHOOKS_ENTRY = new URL("../../webhooks/src/main.ts", import.meta.url);
const ADMIN_TOKEN = "alerts-e2e-admin-token-0123456789";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const RULES = `groups:
  - name: rooms
    interval: 200ms
    rules:
      - alert: HotRoom
        expr: room_temperature_celsius > 30
        for: 1s
        labels: { severity: page }
        annotations: { summary: "{{ $labels.room }} is at {{ $value }}°C" }
`;

async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

/** Everything both scenarios need: a receiver, a private nats-server, webhooks and metrics starters. */
async function setUp(t: TestContext, databaseUrl: string) {
  const dir = await mkdtemp(join(tmpdir(), "casebook-alerts-webhooks-"));
  const schemas = { webhooks: uniqueName("wh_alerts"), metrics: uniqueName("mt_alerts") };
  const stops: Array<() => Promise<unknown>> = [];
  t.after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    for (const [system, schema] of Object.entries(schemas)) {
      const db = await openDatabase({ system, url: databaseUrl, schema, pool: { maxConnections: 1 } });
      await db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => db.close());
    }
    await rm(dir, { recursive: true, force: true });
  });
  const receiver = await startMisbehavingServer();
  stops.push(() => receiver.close());
  const hooks = receiver.received;
  const nats = await spawnNats();
  stops.push(() => nats.stop());
  const rules = join(dir, "rules.yml");
  await writeFile(rules, RULES);

  /** The webhooks service on its schema (a restart keeps its tenants, keys and events). */
  const startWebhooks = async () => {
    const webhooks = await startServerProcess({
      name: "webhooks",
      entry: WEBHOOKS_ENTRY,
      env: {
        DATABASE_URL: databaseUrl,
        WEBHOOKS_DB_SCHEMA: schemas.webhooks,
        WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN,
        WEBHOOKS_ALLOW_HTTP: "true",
        WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32",
        WEBHOOKS_POLL_INTERVAL_MS: "20",
        WEBHOOKS_HTTP_DEADLINE_MS: "5000",
        WEBHOOKS_LEASE_MS: "8000",
      },
    });
    stops.push(() => webhooks.stop());
    return webhooks;
  };
  /** A webhooks tenant with the receiver subscribed to every alert event; its key. */
  const subscribe = async (webhooksUrl: string) => {
    const admin = new WebhooksAdminClient({ url: webhooksUrl, adminToken: ADMIN_TOKEN });
    const { apiKey } = await admin.createTenant({ name: "metrics alerts" });
    admin.close();
    const tenantClient = new WebhooksClient({ url: webhooksUrl, apiKey: apiKey.key });
    await tenantClient.createSubscription({
      url: receiver.url("/ok"),
      eventTypes: ["metrics.alert.*"],
      secret: SECRET,
    });
    tenantClient.close();
    return apiKey.key;
  };
  /** The metrics service on its schema and the private JetStream, alerts to `webhooksUrl`. */
  const startMetrics = async (webhooksUrl: string, webhooksKey: string) => {
    const metrics = await startServerProcess({
      name: "metrics",
      entry: METRICS_ENTRY,
      env: {
        DATABASE_URL: databaseUrl,
        METRICS_DB_SCHEMA: schemas.metrics,
        METRICS_ADMIN_TOKEN: ADMIN_TOKEN,
        METRICS_BOOTSTRAP_TENANT: "off",
        NATS_URL: nats.url,
        METRICS_PARTITIONS: "2",
        // The private nats-server's file store is 256 MiB: the samples' stream and the alert log share it.
        METRICS_STREAM_MAX_BYTES: String(64 * 1024 * 1024),
        CASEBOOK_DATA: join(dir, "metrics"),
        METRICS_ALERT_RULE_FILES: rules,
        // No resend inside the test: every delivery after the first is then a repeat or the resolve.
        METRICS_ALERT_RESEND_MS: "600000",
        WEBHOOKS_URL: webhooksUrl,
        WEBHOOKS_API_KEY: webhooksKey,
      },
    });
    stops.push(() => metrics.stop());
    return metrics;
  };
  /** Metrics' tenant `acme`; its key. */
  const metricsTenant = async (metricsUrl: string) => {
    const created = await fetch(`${metricsUrl}/v1/admin/tenants`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "acme", name: "Acme" }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    return ((await created.json()) as { apiKey: { key: string } }).apiKey.key;
  };
  /** One temperature sample of room `lab`, now; resolves at the ingest's 204 (the stream's ack). */
  const push = async (metricsUrl: string, key: string, celsius: number) => {
    const res = await fetch(`${metricsUrl}/api/v1/push`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        timeseries: [
          {
            labels: { __name__: "room_temperature_celsius", room: "lab" },
            samples: [{ t: Date.now(), v: celsius }],
          },
        ],
      }),
    });
    assert.equal(res.status, 204, await res.text());
    return Date.now();
  };
  return { hooks, startWebhooks, subscribe, startMetrics, metricsTenant, push };
}

/** The Standard Webhooks request, verified with the reference library: its type and data. */
function verify(hook: Received) {
  return new Webhook(SECRET).verify(hook.body, hook.headers as Record<string, string>) as {
    type: string;
    data: AlertmanagerWebhook;
  };
}

test("MT-08 MT-01 alerts through the webhooks system: one signed Alertmanager body per notification, none doubled by an evaluator restart", async (t) => {
  const databaseUrl = await requirePostgres(t);
  if (!databaseUrl) return;
  const { hooks, startWebhooks, subscribe, startMetrics, metricsTenant, push } = await setUp(t, databaseUrl);
  const webhooks = await startWebhooks();
  const webhooksKey = await subscribe(webhooks.url);
  let metrics = await startMetrics(webhooks.url, webhooksKey);
  const key = await metricsTenant(metrics.url);

  await push(metrics.url, key, 21);
  const ackedAtMs = await push(metrics.url, key, 35);
  const firing = await eventually(() => hooks[0], {
    what: "the firing notification at the receiver",
    timeoutMs: 60_000,
  });
  const lagMs = firing.atMs - ackedAtMs;
  t.diagnostic(
    `MT-01 through webhooks: sample acked → signed delivery at the receiver ${lagMs} ms (for: 1s, interval 200ms)`,
  );
  assert.ok(lagMs < 60_000, `MT-01: alerts lag at most 1 min (${lagMs} ms)`);
  const fired = verify(firing);
  assert.equal(fired.type, "metrics.alert.firing");
  assert.equal(fired.data.version, "4");
  assert.equal(fired.data.status, "firing");
  assert.deepEqual(fired.data.groupLabels, { alertname: "HotRoom" });
  assert.equal(fired.data.alerts.length, 1);
  assert.deepEqual(fired.data.alerts[0]!.labels, {
    alertname: "HotRoom",
    room: "lab",
    severity: "page",
    tenant: "acme",
  });
  assert.deepEqual(fired.data.alerts[0]!.annotations, { summary: "lab is at 35°C" });
  assert.equal(fired.data.alerts[0]!.endsAt, "0001-01-01T00:00:00Z");

  // A restart while it fires: the new evaluator repeats the logged notification under its key.
  await metrics.stop();
  metrics = await startMetrics(webhooks.url, webhooksKey);
  await eventually(
    async () =>
      (await counter(metrics.url, "metrics_alert_webhooks_duplicates_total")) >= 1 ? true : undefined,
    { what: "the restarted evaluator's repeat, answered as a duplicate", timeoutMs: 60_000 },
  );
  // The webhooks worker polls every 20 ms: a second delivery would be here well within this.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(hooks.length, 1, "the repeat was stored once and delivered once");

  await push(metrics.url, key, 22);
  const resolvedHook = await eventually(() => hooks[1], {
    what: "the resolved notification",
    timeoutMs: 60_000,
  });
  const resolved = verify(resolvedHook);
  assert.equal(resolved.type, "metrics.alert.resolved");
  assert.equal(resolved.data.status, "resolved");
  assert.equal(resolved.data.alerts[0]!.startsAt, fired.data.alerts[0]!.startsAt, "the same episode");
  assert.ok(Date.parse(resolved.data.alerts[0]!.endsAt) >= Date.parse(fired.data.alerts[0]!.startsAt));
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(hooks.length, 2, "one firing and one resolved body, each delivered once");
  assert.notEqual(firing.headers["webhook-id"], resolvedHook.headers["webhook-id"]);
});

test("MT-08 a notification caught mid-way — decided and logged while webhooks is down, its publishes failed, metrics restarted — is delivered exactly once after both come back", async (t) => {
  const databaseUrl = await requirePostgres(t);
  if (!databaseUrl) return;
  const { hooks, startWebhooks, subscribe, startMetrics, metricsTenant, push } = await setUp(t, databaseUrl);
  let webhooks = await startWebhooks();
  const webhooksKey = await subscribe(webhooks.url);
  let metrics = await startMetrics(webhooks.url, webhooksKey);
  const key = await metricsTenant(metrics.url);

  await webhooks.stop();
  await push(metrics.url, key, 21);
  await push(metrics.url, key, 35);
  await eventually(
    async () => {
      const text = await (await fetch(`${metrics.url}/metrics`)).text();
      return /^metrics_alert_notifications_total\{[^}]*status="firing"[^}]*\} 1$/m.test(text)
        ? true
        : undefined;
    },
    { what: "the firing notification decided (and logged) while webhooks is down", timeoutMs: 60_000 },
  );
  await metrics.stop(); // its publishes failed (or still retry): what its queue held goes with it
  assert.equal(hooks.length, 0);

  webhooks = await startWebhooks();
  metrics = await startMetrics(webhooks.url, webhooksKey);
  const firing = await eventually(() => hooks[0], {
    what: "the logged notification, delivered",
    timeoutMs: 60_000,
  });
  const fired = verify(firing);
  assert.equal(fired.type, "metrics.alert.firing");
  assert.deepEqual(fired.data.alerts[0]!.labels, {
    alertname: "HotRoom",
    room: "lab",
    severity: "page",
    tenant: "acme",
  });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(hooks.length, 1, "delivered once");
  assert.equal(
    await counter(metrics.url, "metrics_alert_webhooks_duplicates_total"),
    0,
    "it had never been stored",
  );
});
