/**
 * The delivery worker end to end on PostgreSQL, against a local receiver that verifies
 * every request with the `standardwebhooks` library (not our verifier): ingest → outbox
 * relay → fan-out → worker → signed POST → recorded outcome. Plus the worker's decisions
 * that need the whole path: the re-check before sending (WH-04), 410 Gone, Retry-After
 * holds, secret rotation, a subscription with no usable secret, and the metrics (WH-24).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { createMetricsRegistry } from "@casebook/infra/http/metrics";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock, systemClock } from "@casebook/kit/clock";
import { requirePostgres } from "@casebook/lab/test-engines";
import { Webhook } from "standardwebhooks";
import { createReceiverTenant, newTestSecret } from "../bench/backlog.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../bench/webhook-receiver.ts";
import type { HttpSender } from "../src/clients/http-sender.ts";
import { commitTo2xxQuantiles, createWorkerMetrics } from "../src/metrics.ts";
import { ingestEvent } from "../src/store/event-repository.ts";
import { rotateSubscriptionSecret, setSubscriptionActive } from "../src/store/subscription-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { openPostgresTestSchema, type TestSchema } from "./store-backends.ts";
import { relayAll, T0_MS } from "./store-fixture.ts";
import { statesOf, testSender, testWorker } from "./worker-fixture.ts";

const WAIT_MS = 20_000;
let schema: TestSchema | undefined;
let sender: HttpSender;
const receivers: WebhookReceiver[] = [];

before(async () => {
  sender = testSender();
});

after(async () => {
  sender.close();
  for (const r of receivers) await r.close();
  await schema?.drop();
});

async function database(t: { skip(message?: string): void }): Promise<Database | undefined> {
  const url = await requirePostgres(t);
  if (!url) return undefined;
  schema ??= await openPostgresTestSchema(url, { prefix: "wh_worker_e2e", maxConnections: 6 });
  return schema.db;
}

async function receiver(secrets: string[]): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver({ secrets });
  receivers.push(r);
  return r;
}

const ctx = (nowMs: number) => ({ nowMs, randomBytes: (n: number) => randomBytes(n) });

/** A manual-clock world: the relay fans out at the clock's time, the worker runs one round at a time. */
function manualWorld(db: Database) {
  const clock = new ManualClock(T0_MS);
  const world = { db, clock, randomBytes: (n: number) => randomBytes(n), ctx: () => ctx(clock.nowMs()) };
  return { clock, world };
}

test("WH-01 WH-02 ingested events are fanned out and delivered: every request verifies with standardwebhooks, every delivery succeeded once", async (t) => {
  const db = await database(t);
  if (!db) return;
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  const tenant = await createReceiverTenant(db, {
    name: "e2e",
    url: rx.url("/e2e"),
    secret,
    subscriptions: 2,
  });
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const metrics = createWorkerMetrics(registry);
  const relay = new OutboxRelay(db, { publisher: new Dispatcher(db), pollIntervalMs: 10, onError: () => {} });
  const worker = testWorker(db, systemClock, sender, { metrics });
  relay.start();
  worker.start();
  t.after(async () => {
    await relay.stop();
    await worker.stop();
  });
  const EVENTS = 20;
  const eventIds = new Set<string>();
  for (let i = 0; i < EVENTS; i++) {
    const { eventId } = await ingestEvent(
      db,
      tenant.tenantId,
      { type: "invoice.paid", payload: { n: i } },
      ctx(Date.now()),
    );
    eventIds.add(eventId);
  }
  await rx.waitFor(() => rx.requests >= EVENTS * 2, WAIT_MS);
  await relay.stop();
  await worker.stop(); // drains: every answer is recorded
  assert.equal(rx.unverified, 0, "every request verified with the receiver's secret");
  assert.equal(rx.requests, EVENTS * 2, "one request per (event, subscription)");
  assert.deepEqual(new Set(rx.received.map((r) => r.id)), eventIds, "webhook-id is the stable event id");
  const envelope = JSON.parse(rx.received[0]!.body) as {
    type: string;
    timestamp: string;
    data: { n: number };
  };
  assert.equal(envelope.type, "invoice.paid");
  assert.ok(Number.isInteger(envelope.data.n) && !Number.isNaN(Date.parse(envelope.timestamp)));
  assert.deepEqual(await statesOf(db, tenant.tenantId), { succeeded: EVENTS * 2 });
  const { rows } = await db.query<{ n: bigint; classes: string[] }>(
    "SELECT count(*) AS n, array_agg(DISTINCT response_class) AS classes FROM attempts WHERE tenant_id = $1",
    [tenant.tenantId],
  );
  assert.equal(rows[0]!.n, BigInt(EVENTS * 2), "one attempt each");
  assert.deepEqual(rows[0]!.classes, ["2xx"]);
  const q = await commitTo2xxQuantiles(metrics, tenant.tenantId);
  assert.equal(q.count, EVENTS * 2);
  assert.ok(q.p50! > 0 && q.p50! <= q.p95! && q.p95! <= q.p99!);
  t.diagnostic(
    `commit→2xx from buckets: p50 ${(q.p50! * 1e3).toFixed(1)} ms, p99 ${(q.p99! * 1e3).toFixed(1)} ms`,
  );
});

test("WH-02 rotation overlap: two signatures; a receiver with only the old or only the new secret verifies; after the overlap only the new one signs", async (t) => {
  const db = await database(t);
  if (!db) return;
  const { clock, world } = manualWorld(db);
  const oldSecret = newTestSecret();
  const rx = await receiver([oldSecret]);
  const tenant = await createReceiverTenant(db, {
    name: "rot",
    url: rx.url("/rot"),
    secret: oldSecret,
    nowMs: clock.nowMs(),
  });
  const subscriptionId = tenant.subscriptionIds[0]!;
  const { secret: newSecret } = await rotateSubscriptionSecret(db, tenant.tenantId, subscriptionId, {
    ...ctx(clock.nowMs()),
    overlapMs: 3_600_000,
  });
  const worker = testWorker(db, clock, sender);
  await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { during: true } }, world.ctx());
  await relayAll(world);
  await worker.runOnce();
  clock.advance(3_600_000 + 1);
  await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { during: false } }, world.ctx());
  await relayAll(world);
  await worker.runOnce();
  const [during, afterOverlap] = rx.received;
  assert.ok(during && afterOverlap, "both events delivered");
  assert.equal(during.signatures, 2, "old and new secret both sign during the overlap");
  for (const secret of [oldSecret, newSecret]) new Webhook(secret).verify(during.body, during.headers);
  assert.equal(afterOverlap.signatures, 1);
  new Webhook(newSecret).verify(afterOverlap.body, afterOverlap.headers);
  assert.throws(() => new Webhook(oldSecret).verify(afterOverlap.body, afterOverlap.headers));
});

test("WH-04 a subscription deactivated after its deliveries were queued: the worker sends nothing and cancels them", async (t) => {
  const db = await database(t);
  if (!db) return;
  const { clock, world } = manualWorld(db);
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  const tenant = await createReceiverTenant(db, {
    name: "wh04",
    url: rx.url("/wh04"),
    secret,
    nowMs: clock.nowMs(),
  });
  for (let i = 0; i < 5; i++)
    await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { i } }, world.ctx());
  await relayAll(world);
  assert.deepEqual(await statesOf(db, tenant.tenantId), { pending: 5 }, "queued before the change");
  await setSubscriptionActive(db, tenant.tenantId, tenant.subscriptionIds[0]!, {
    active: false,
    reason: "paused by the tenant",
    nowMs: clock.nowMs(),
  });
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const metrics = createWorkerMetrics(registry);
  const worker = testWorker(db, clock, sender, { metrics });
  assert.equal((await worker.runOnce()).claimed, 5);
  assert.equal(rx.requests, 0, "nothing was sent");
  assert.deepEqual(await statesOf(db, tenant.tenantId), { cancelled: 5 });
  const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM attempts WHERE tenant_id = $1", [
    tenant.tenantId,
  ]);
  assert.equal(rows[0]!.n, 0n, "no attempt recorded");
  assert.match(await registry.metrics(), /webhooks_send_skipped_total\{reason="subscription_inactive"\} 5/);
});

test("WH-16 410 Gone: the delivery fails, the subscription is disabled (and the tenant told), its other queued deliveries are cancelled unsent", async (t) => {
  const db = await database(t);
  if (!db) return;
  const { clock, world } = manualWorld(db);
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  rx.setMode({ kind: "status", status: 410 });
  const tenant = await createReceiverTenant(db, {
    name: "gone",
    url: rx.url("/gone"),
    secret,
    maxConcurrency: 1,
    nowMs: clock.nowMs(),
  });
  for (let i = 0; i < 3; i++)
    await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { i } }, world.ctx());
  await relayAll(world);
  await testWorker(db, clock, sender).runOnce();
  assert.equal(rx.requests, 1, "one request: the 410 stops the rest");
  assert.deepEqual(await statesOf(db, tenant.tenantId), { cancelled: 2, failed: 1 });
  const { rows } = await db.query<{ active: boolean; disabled_reason: string; status: string }>(
    "SELECT active, disabled_reason, status FROM subscriptions WHERE id = $1",
    [tenant.subscriptionIds[0]],
  );
  assert.deepEqual(rows[0], {
    active: false,
    disabled_reason: "the endpoint answered 410 Gone",
    status: "disabled",
  });
  const notices = await db.query<{ payload: { subscriptionId: string; status: string } }>(
    "SELECT payload FROM events WHERE tenant_id = $1 AND type = 'webhook.subscription.disabled'",
    [tenant.tenantId],
  );
  assert.deepEqual(
    notices.rows.map((r) => [r.payload.subscriptionId, r.payload.status]),
    [[tenant.subscriptionIds[0], "disabled"]],
    "one notice to the tenant",
  );
});

test("Retry-After on a 503 holds every delivery to that endpoint until then, and the backoff never undercuts it", async (t) => {
  const db = await database(t);
  if (!db) return;
  const { clock, world } = manualWorld(db);
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  rx.setMode({ kind: "status", status: 503, retryAfter: "120" });
  const tenant = await createReceiverTenant(db, {
    name: "busy",
    url: rx.url("/busy"),
    secret,
    maxConcurrency: 1,
    nowMs: clock.nowMs(),
  });
  for (let i = 0; i < 3; i++)
    await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { i } }, world.ctx());
  await relayAll(world);
  const holdEndMs = clock.nowMs() + 120_000;
  const worker = testWorker(db, clock, sender);
  await worker.runOnce();
  assert.equal(rx.requests, 1, "the first 503 holds the other two");
  const { rows } = await db.query<{ next: Date; attempts: number }>(
    "SELECT next_attempt_at AS next, attempts FROM deliveries WHERE tenant_id = $1 AND state = 'pending'",
    [tenant.tenantId],
  );
  assert.equal(rows.length, 3, "all three wait, none lost");
  for (const row of rows) assert.ok(row.next.getTime() >= holdEndMs, "due no earlier than Retry-After says");
  clock.advance(60_000);
  assert.equal((await worker.runOnce()).claimed, 0, "nothing is due inside the hold");
  rx.setMode({ kind: "ok" });
  clock.advance(60_000 + 300_000);
  for (let round = 0; round < 5 && (await statesOf(db, tenant.tenantId)).pending !== undefined; round++)
    await worker.runOnce();
  assert.deepEqual(await statesOf(db, tenant.tenantId), { succeeded: 3 });
});

test("WH-24 a subscription with no live signing secret: nothing is sent, the delivery fails, sends_without_secret counts it", async (t) => {
  const db = await database(t);
  if (!db) return;
  const { clock, world } = manualWorld(db);
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  const tenant = await createReceiverTenant(db, {
    name: "nosecret",
    url: rx.url("/ns"),
    secret,
    nowMs: clock.nowMs(),
  });
  // Only a broken store gets here (the current secret never expires): simulate one.
  await db.query("UPDATE subscription_secrets SET expires_at = $2 WHERE subscription_id = $1", [
    tenant.subscriptionIds[0],
    new Date(clock.nowMs() - 1),
  ]);
  await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: {} }, world.ctx());
  await relayAll(world);
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const metrics = createWorkerMetrics(registry);
  await testWorker(db, clock, sender, { metrics }).runOnce();
  assert.equal(rx.requests, 0);
  assert.deepEqual(await statesOf(db, tenant.tenantId), { failed: 1 });
  const text = await registry.metrics();
  assert.match(text, new RegExp(`webhooks_sends_without_secret_total\\{tenant="${tenant.tenantId}"\\} 1`));
  assert.match(
    text,
    new RegExp(`webhooks_deliveries_finished_total\\{tenant="${tenant.tenantId}",state="failed"\\} 1`),
  );
});

test("WH-24 the store-backed gauges: oldest queued age and deliveries per state, per tenant, on the registry", async (t) => {
  const db = await database(t);
  if (!db) return;
  const secret = newTestSecret();
  const rx = await receiver([secret]);
  rx.setMode({ kind: "hold" });
  const nowMs = Date.now();
  const tenant = await createReceiverTenant(db, {
    name: "gauges",
    url: rx.url("/g"),
    secret,
    nowMs: nowMs - 60_000,
  });
  await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: {} }, ctx(nowMs - 30_000));
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const worker = testWorker(db, systemClock, sender, {
    metrics: createWorkerMetrics(registry),
    maxInFlight: 1,
  });
  await relayAll({ db, clock: new ManualClock(nowMs - 30_000), randomBytes, ctx: () => ctx(nowMs) });
  worker.start(); // the first loop turn refreshes the gauges
  t.after(() => worker.stop());
  await rx.waitFor(() => rx.requests >= 1, WAIT_MS);
  const text = await waitForMetric(
    registry,
    `webhooks_deliveries{tenant="${tenant.tenantId}",state="in_flight"} 1`,
  );
  const age = new RegExp(
    `webhooks_oldest_queued_age_seconds\\{tenant="${tenant.tenantId}"\\} (\\d+(\\.\\d+)?)`,
  ).exec(text);
  assert.ok(age && Number(age[1]) >= 29, `oldest queued age of the 30 s old event, got ${age?.[1]}`);
  await rx.close(); // the held request ends with a reset: recorded as a failed attempt, retried later
});

async function waitForMetric(registry: import("prom-client").Registry, line: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const text = await registry.metrics();
    if (text.includes(line)) return text;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`metric line never appeared: ${line}`);
}
