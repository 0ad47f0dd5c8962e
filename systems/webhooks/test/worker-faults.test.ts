/**
 * Receivers that misbehave for a long time, compressed with a ManualClock (the worker's
 * decisions run on it; requests are real, to a local receiver): each test steps the clock
 * to the next due delivery, or by a fixed step, and runs the worker one round at a time.
 *
 * - WH-16: a receiver answering 403 forever → quarantined once the 403s persist (≥ 5 over
 *   ≥ 1 h), the endpoint's status `quarantined`, and a `webhook.subscription.quarantined`
 *   event delivered to the tenant's other endpoint; a 2xx in between resets the streak;
 * - the DNS failures: a name that does not resolve (ENOTFOUND, EAI_AGAIN) is retried
 *   for the whole window and ends `expired`, the endpoint `failing`, never quarantined;
 * - WH-23: a receiver down "two days" under the 24 h policy → `expired` at the deadline,
 *   retried up to it and never attempted after it;
 * - the outage: receiver failing (500) for "15 minutes" while events keep arriving →
 *   after recovery the backlog drains, nothing lost, nothing attempted past its deadline;
 * - WH-20: a retry storm at recovery → retries stay within the budget in every window, and
 *   new events keep their first attempt on arrival.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { Resolver } from "@casebook/infra/http/address-guard";
import { createMetricsRegistry } from "@casebook/infra/http/metrics";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { requirePostgres } from "@casebook/lab/test-engines";
import { createReceiverTenant, newTestSecret, seedBacklog } from "../bench/backlog.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../bench/webhook-receiver.ts";
import { HttpSender } from "../src/clients/http-sender.ts";
import { DEFAULT_QUARANTINE_BOUNDS } from "../src/domain/endpoint-health.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";
import { createWorkerMetrics } from "../src/metrics.ts";
import { SUBSCRIPTION_EVENT_TYPES } from "../src/store/endpoint-health.ts";
import { ingestEvent } from "../src/store/event-repository.ts";
import { createSubscription } from "../src/store/subscription-repository.ts";
import type { DeliveryWorker } from "../src/workers/delivery-worker.ts";
import { openPostgresTestSchema, type TestSchema } from "./store-backends.ts";
import { DAY_MS, relayAll, T0_MS } from "./store-fixture.ts";
import { nextDueMs, statesOf, TEST_TIMEOUTS, testSender, testWorker } from "./worker-fixture.ts";

/** Bound on worker rounds in one test: far above what each needs (WH-23: ~400 per delivery). */
const MAX_ROUNDS = 5_000;
let schema: TestSchema | undefined;
let sender: HttpSender;
const receivers: WebhookReceiver[] = [];

before(() => {
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
  schema ??= await openPostgresTestSchema(url, { prefix: "wh_worker_faults", maxConnections: 4 });
  return schema.db;
}

async function world(t: { skip(message?: string): void }, name: string, options: { host?: string } = {}) {
  const db = await database(t);
  if (!db) return undefined;
  const clock = new ManualClock(T0_MS);
  const secret = newTestSecret();
  const rx = await startWebhookReceiver({ secrets: [secret] });
  receivers.push(rx);
  const url = options.host === undefined ? rx.url(`/${name}`) : `http://${options.host}:${rx.port}/${name}`;
  const tenant = await createReceiverTenant(db, { name, url, secret, nowMs: clock.nowMs() });
  const ctx = () => ({ nowMs: clock.nowMs(), randomBytes: (n: number) => randomBytes(n) });
  const relay = () => relayAll({ db, clock, randomBytes: (n) => randomBytes(n), ctx });
  const ingest = async (count: number) => {
    for (let i = 0; i < count; i++)
      await ingestEvent(db, tenant.tenantId, { type: "a.b", payload: { i } }, ctx());
    await relay();
  };
  /** The tenant's second endpoint, on a receiver of its own, subscribed to the system's notices only. */
  const opsEndpoint = async () => {
    const ops = await startWebhookReceiver({ secrets: [secret] });
    receivers.push(ops);
    const filters = ["webhook.subscription.*"];
    await createSubscription(
      db,
      tenant.tenantId,
      { url: ops.url("/ops"), eventTypes: filters, secret },
      ctx(),
    );
    return ops;
  };
  return { db, clock, rx, tenant, ingest, relay, opsEndpoint };
}

/** A sender whose resolver fails every lookup with `codes` in turn: a name that does not resolve. */
function unresolvableSender(codes: readonly string[], resolvesAfter = Number.POSITIVE_INFINITY) {
  let calls = 0;
  const resolver: Resolver = async () => {
    calls += 1;
    if (calls > resolvesAfter) return [{ address: "127.0.0.1", family: 4 }];
    const code = codes[(calls - 1) % codes.length]!;
    throw Object.assign(new Error(`getaddrinfo ${code} hooks.invalid`), { code });
  };
  const dnsSender = new HttpSender({
    policy: createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] }),
    timeouts: TEST_TIMEOUTS,
    resolver,
  });
  return { sender: dnsSender, lookups: () => calls };
}

interface StatusRow {
  active: boolean;
  status: string;
  status_reason: string | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  client_errors: number;
}

async function subscriptionStatus(db: Database, subscriptionId: string): Promise<StatusRow> {
  const { rows } = await db.query<StatusRow>(
    `SELECT active, status, status_reason, disabled_reason, failing_since, client_errors
       FROM subscriptions WHERE id = $1`,
    [subscriptionId],
  );
  return rows[0]!;
}

/** Steps the clock to each next due delivery and runs a round, until nothing is due before `untilMs`. */
async function runToQuiet(
  db: Database,
  clock: ManualClock,
  worker: DeliveryWorker,
  untilMs: number,
): Promise<number> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = await nextDueMs(db);
    if (due === undefined || due > untilMs) return round;
    if (due > clock.nowMs()) clock.advance(due - clock.nowMs());
    await worker.runOnce();
  }
  throw new Error(`still busy after ${MAX_ROUNDS} rounds`);
}

/** Rounds until one claims nothing: a worker running flat out within one instant. */
async function runWhileClaiming(worker: DeliveryWorker): Promise<void> {
  for (let round = 0; round < 1_000; round++) if ((await worker.runOnce()).claimed === 0) return;
  throw new Error("still claiming after 1000 rounds");
}

interface AttemptRow {
  delivery_id: string;
  attempt_no: number;
  started_at: Date;
  deadline_at: Date;
  created_at: Date;
}

async function attemptsOf(db: Database, tenantId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT a.delivery_id, a.attempt_no, a.started_at, d.deadline_at, d.created_at
       FROM attempts a JOIN deliveries d ON d.id = a.delivery_id
      WHERE a.tenant_id = $1 ORDER BY a.started_at, a.delivery_id`,
    [tenantId],
  );
  return rows;
}

test("WH-16 a receiver answering 403 forever: quarantined once the 403s persist (≥ 5 over ≥ 1 h), the status says so, and the tenant gets a webhook.subscription.quarantined event", async (t) => {
  const w = await world(t, "forbidden");
  if (!w) return;
  const ops = await w.opsEndpoint();
  w.rx.setMode({ kind: "status", status: 403 });
  await w.ingest(1);
  const worker = testWorker(w.db, w.clock, sender);
  await runToQuiet(w.db, w.clock, worker, T0_MS + DAY_MS);
  const { rows } = await w.db.query<{ state: string; attempts: number; state_reason: string }>(
    "SELECT d.state, d.attempts, d.state_reason FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.type = 'a.b' AND d.tenant_id = $1",
    [w.tenant.tenantId],
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.state, "quarantined");
  assert.match(rows[0]!.state_reason, /^\d+ client errors in a row over \d+ s \(last: 4xx\)$/);
  const attempts = await attemptsOf(w.db, w.tenant.tenantId);
  const spanMs = attempts.at(-1)!.started_at.getTime() - attempts[0]!.started_at.getTime();
  assert.ok(attempts.length > DEFAULT_QUARANTINE_BOUNDS.clientErrorsMin, `${attempts.length} attempts`);
  // The quarantining attempt ENDS at least an hour after the first 403 ended: allow one deadline.
  assert.ok(
    spanMs + 10_000 >= DEFAULT_QUARANTINE_BOUNDS.spanMsMin,
    `quarantined ${spanMs} ms after the first`,
  );
  assert.ok(spanMs < DEFAULT_QUARANTINE_BOUNDS.spanMsMin + 300_000, "and within one backoff cap of it");
  assert.equal(w.rx.requests, attempts.length, "not retried for 24 h (convoy#1833)");
  const [subscriptionId] = w.tenant.subscriptionIds;
  const status = await subscriptionStatus(w.db, subscriptionId!);
  assert.equal(status.active, false);
  assert.equal(status.status, "quarantined");
  assert.match(status.status_reason!, /^quarantined: /);
  assert.equal(status.disabled_reason, status.status_reason);
  const sinceFirstMs = status.failing_since!.getTime() - attempts[0]!.started_at.getTime();
  assert.ok(sinceFirstMs >= 0 && sinceFirstMs < 10_000, "failing since the first 403");
  // The tenant is told: one notice, fanned out to its other endpoint and delivered there.
  await w.relay();
  await runToQuiet(w.db, w.clock, worker, w.clock.nowMs() + DAY_MS);
  const notices = ops.received.filter((r) => r.path === "/ops");
  assert.equal(notices.length, 1, "one notice");
  assert.equal(notices[0]!.verified, true);
  const body = JSON.parse(notices[0]!.body) as { type: string; data: Record<string, unknown> };
  assert.equal(body.type, SUBSCRIPTION_EVENT_TYPES.quarantined);
  assert.equal(body.data.subscriptionId, subscriptionId);
  assert.equal(body.data.status, "quarantined");
  assert.equal(body.data.clientErrors, attempts.length);
  await w.ingest(1); // a later event finds the endpoint disabled: no delivery at all
  const { rows: later } = await w.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM deliveries WHERE subscription_id = $1",
    [subscriptionId],
  );
  assert.equal(Number(later[0]!.n), 1);
  t.diagnostic(
    `quarantined at attempt ${attempts.length}, ${(spanMs / 60_000).toFixed(1)} min after the first 403`,
  );
});

test("WH-16 a recovery resets the streak: 403s for 45 min, one 2xx, then the endpoint is active with no streak", async (t) => {
  const w = await world(t, "recovers");
  if (!w) return;
  const [subscriptionId] = w.tenant.subscriptionIds;
  w.rx.setMode({ kind: "status", status: 403 });
  await w.ingest(1);
  const worker = testWorker(w.db, w.clock, sender);
  await runToQuiet(w.db, w.clock, worker, T0_MS + 45 * 60_000);
  const failing = await subscriptionStatus(w.db, subscriptionId!);
  assert.equal(failing.status, "failing");
  assert.equal(failing.active, true);
  assert.ok(
    failing.client_errors >= DEFAULT_QUARANTINE_BOUNDS.clientErrorsMin,
    `${failing.client_errors} 403s`,
  );
  assert.match(failing.status_reason!, /^4xx 403/);
  assert.equal(
    failing.failing_since?.getTime(),
    T0_MS,
    "since the first 403 (the clock only moves between rounds)",
  );
  w.rx.setMode({ kind: "ok" });
  await runToQuiet(w.db, w.clock, worker, T0_MS + DAY_MS);
  assert.deepEqual(await statesOf(w.db, w.tenant.tenantId), { succeeded: 1 });
  const healed = await subscriptionStatus(w.db, subscriptionId!);
  assert.deepEqual(
    [healed.status, healed.active, healed.client_errors, healed.failing_since, healed.status_reason],
    ["active", true, 0, null, null],
  );
});

test("the issue: a name that does not resolve (ENOTFOUND) is retried for the whole window and expires; the endpoint is failing, never quarantined", async (t) => {
  const w = await world(t, "nxdomain", { host: "hooks.invalid" });
  if (!w) return;
  const ops = await w.opsEndpoint();
  const dns = unresolvableSender(["ENOTFOUND"]);
  try {
    await w.ingest(1);
    const worker = testWorker(w.db, w.clock, dns.sender);
    await runToQuiet(w.db, w.clock, worker, T0_MS + 2 * DAY_MS);
    const { rows } = await w.db.query<{ state: string; state_reason: string }>(
      "SELECT state, state_reason FROM deliveries WHERE tenant_id = $1",
      [w.tenant.tenantId],
    );
    assert.deepEqual(
      rows.map((r) => r.state),
      ["expired"],
      "ended by the window, not by quarantine",
    );
    const attempts = await attemptsOf(w.db, w.tenant.tenantId);
    assert.ok(attempts.length > 300, `${attempts.length} attempts`);
    assert.equal(dns.lookups(), attempts.length, "each attempt resolved the name afresh");
    const last = attempts.at(-1)!.started_at.getTime();
    assert.ok(T0_MS + DAY_MS - last <= 300_000, "retried right up to the deadline (within one 300 s cap)");
    const status = await subscriptionStatus(w.db, w.tenant.subscriptionIds[0]!);
    assert.equal(status.status, "failing");
    assert.equal(status.active, true, "still on: a new event would be tried");
    assert.equal(status.client_errors, 0);
    const sinceFirstMs = status.failing_since!.getTime() - attempts[0]!.started_at.getTime();
    assert.ok(sinceFirstMs >= 0 && sinceFirstMs < 10_000, "failing since the first attempt");
    assert.match(status.status_reason!, /^dns_error/);
    await w.relay();
    assert.equal(ops.requests, 0, "no notice: nothing was switched off");
    t.diagnostic(`${attempts.length} attempts over 24 h, all dns_error`);
  } finally {
    dns.sender.close();
  }
});

test("the issue: DNS failing for an hour, then resolving: delivered, and the endpoint is active again", async (t) => {
  const w = await world(t, "dnsheals", { host: "hooks.invalid" });
  if (!w) return;
  const dns = unresolvableSender(["EAI_AGAIN", "ENOTFOUND"], 25);
  try {
    await w.ingest(1);
    const worker = testWorker(w.db, w.clock, dns.sender);
    await runToQuiet(w.db, w.clock, worker, T0_MS + DAY_MS);
    assert.deepEqual(await statesOf(w.db, w.tenant.tenantId), { succeeded: 1 });
    const attempts = await attemptsOf(w.db, w.tenant.tenantId);
    assert.equal(attempts.length, 26, "25 DNS failures, then the 2xx");
    assert.ok(
      attempts.at(-1)!.started_at.getTime() - T0_MS > 3_600_000,
      "failing for over an hour, not quarantined",
    );
    const status = await subscriptionStatus(w.db, w.tenant.subscriptionIds[0]!);
    assert.deepEqual([status.status, status.failing_since, status.status_reason], ["active", null, null]);
  } finally {
    dns.sender.close();
  }
});

test("WH-23 a receiver down for two days under the 24 h policy: retried up to the deadline, then expired, never attempted after it", async (t) => {
  const w = await world(t, "down2d");
  if (!w) return;
  w.rx.setMode({ kind: "reset" });
  await w.ingest(1);
  const worker = testWorker(w.db, w.clock, sender);
  const rounds = await runToQuiet(w.db, w.clock, worker, T0_MS + 2 * DAY_MS);
  w.clock.advance(T0_MS + 2 * DAY_MS - w.clock.nowMs());
  assert.equal((await worker.runOnce()).claimed, 0, "day two: nothing left to try");
  const { rows } = await w.db.query<{
    state: string;
    state_reason: string;
    finished_at: Date;
    deadline_at: Date;
  }>("SELECT state, state_reason, finished_at, deadline_at FROM deliveries WHERE tenant_id = $1", [
    w.tenant.tenantId,
  ]);
  assert.equal(rows.length, 1);
  const attempts = await attemptsOf(w.db, w.tenant.tenantId);
  for (const d of rows) {
    assert.equal(d.state, "expired", "a visible terminal state, not a promise");
    assert.match(d.state_reason, /deadline/);
    assert.equal(d.deadline_at.getTime(), T0_MS + DAY_MS, "the 24 h window");
    assert.ok(d.finished_at.getTime() <= d.deadline_at.getTime(), "ended no later than the deadline");
  }
  for (const a of attempts) assert.ok(a.started_at < a.deadline_at, "no attempt started after the deadline");
  const last = Math.max(...attempts.map((a) => a.started_at.getTime()));
  assert.ok(T0_MS + DAY_MS - last <= 300_000, "retried right up to the deadline (within one 300 s cap)");
  assert.equal(w.rx.requests, attempts.length, "every request is an attempt row");
  t.diagnostic(`${attempts.length} attempts over 24 h, ${rounds} worker rounds`);
});

test("the issue's outage: receiver failing for 15 minutes while events keep arriving; after recovery the backlog drains, nothing lost, nothing past its deadline", async (t) => {
  const w = await world(t, "outage");
  if (!w) return;
  const STEP_MS = 10_000;
  const OUTAGE_MS = 15 * 60_000;
  const ARRIVALS_UNTIL_MS = OUTAGE_MS + 5 * 60_000;
  w.rx.setMode({ kind: "status", status: 500 });
  const worker = testWorker(w.db, w.clock, sender);
  let drainedAtMs: number | undefined;
  for (let step = 0; step < 1_000 && drainedAtMs === undefined; step++) {
    const elapsedMs = w.clock.nowMs() - T0_MS;
    if (elapsedMs >= OUTAGE_MS) w.rx.setMode({ kind: "ok" });
    if (elapsedMs < ARRIVALS_UNTIL_MS) await w.ingest(1);
    await runWhileClaiming(worker);
    const states = await statesOf(w.db, w.tenant.tenantId);
    if (elapsedMs >= ARRIVALS_UNTIL_MS && states.pending === undefined && states.in_flight === undefined)
      drainedAtMs = elapsedMs;
    w.clock.advance(STEP_MS);
  }
  const events = ARRIVALS_UNTIL_MS / STEP_MS;
  assert.deepEqual(await statesOf(w.db, w.tenant.tenantId), { succeeded: events }, "nothing lost");
  const attempts = await attemptsOf(w.db, w.tenant.tenantId);
  for (const a of attempts) assert.ok(a.started_at < a.deadline_at, "nothing attempted past its deadline");
  const failed = attempts.filter((a) => a.started_at.getTime() < T0_MS + OUTAGE_MS).length;
  assert.ok(
    drainedAtMs !== undefined && drainedAtMs <= OUTAGE_MS + 15 * 60_000,
    "drained within 15 min of recovery",
  );
  const unique = new Set(w.rx.received.filter((r) => r.answer === 204).map((r) => r.id));
  assert.equal(unique.size, events, "each event's 2xx arrived");
  t.diagnostic(
    `${events} events, ${attempts.length} attempts (${failed} during the outage); backlog drained ${((drainedAtMs! - OUTAGE_MS) / 1_000).toFixed(0)} s after recovery`,
  );
});

test("WH-20 a retry storm at recovery: retries stay within the budget in every 10 s window, and every new event is sent on arrival", async (t) => {
  const w = await world(t, "storm");
  if (!w) return;
  const BACKLOG = 200;
  const NEW_PER_S = 2;
  await seedBacklog(w.db, { ...w.tenant, events: BACKLOG, nowMs: w.clock.nowMs(), payloadBytes: 64 });
  // They all failed once during the outage and come due together at recovery.
  await w.db.query("UPDATE deliveries SET attempts = 1 WHERE tenant_id = $1", [w.tenant.tenantId]);
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const worker = testWorker(w.db, w.clock, sender, { metrics: createWorkerMetrics(registry) });
  for (let second = 0; second < 600; second++) {
    await w.ingest(NEW_PER_S);
    await runWhileClaiming(worker);
    const states = await statesOf(w.db, w.tenant.tenantId);
    if (states.pending === undefined && states.in_flight === undefined) break;
    w.clock.advance(1_000);
  }
  assert.deepEqual(
    Object.keys(await statesOf(w.db, w.tenant.tenantId)),
    ["succeeded"],
    "the storm drained, nothing lost",
  );
  const attempts = await attemptsOf(w.db, w.tenant.tenantId);
  const firsts = attempts.filter((a) => a.attempt_no === 1);
  for (const a of firsts)
    assert.equal(a.started_at.getTime(), a.created_at.getTime(), "new work sent on arrival");
  const endS = Math.max(...attempts.map((a) => (a.started_at.getTime() - T0_MS) / 1_000));
  let worst = 0;
  for (let s = 0; s <= endS; s++) {
    const inWindow = attempts.filter((a) => {
      const at = (a.started_at.getTime() - T0_MS) / 1_000;
      return at > s - 10 && at <= s;
    });
    const f = inWindow.filter((a) => a.attempt_no === 1).length;
    const r = inWindow.length - f;
    const bound = Math.floor((0.2 * f + 10) / 0.8 + 1e-9); // fraction 0.2, floor 1 retry/s over 10 s
    assert.ok(r <= bound, `window ending at ${s} s: ${r} retries, budget ${bound}`);
    worst = Math.max(worst, r);
  }
  assert.match(await registry.metrics(), /webhooks_deferred_total\{reason="retry_budget"\} [1-9]/);
  t.diagnostic(
    `${BACKLOG} retries drained in ${endS} s beside ${firsts.length} new events; at most ${worst} retries in any 10 s window`,
  );
});
