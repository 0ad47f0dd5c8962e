/**
 * PY-17 observability: the payments metrics after real payments (approved and declined) against
 * the acquirer simulator over HTTP, the correlation id (the payment's acquirer key) on every saga,
 * acquirer-client and request log line of a payment, the correlation header at the acquirer,
 * and the cached bounded backlog count. Refunds likewise: their acquirer calls (the request's and
 * the retry worker's) tagged by operation and outcome, the refund's acquirer key as correlation id.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { ManualClock, systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { engineFree, uniqueName } from "@casebook/lab/test-engines";
import { registerPaymentsApi } from "../src/api/register-api.ts";
import {
  AcquirerClient,
  type AcquirerClientOptions,
  CORRELATION_HEADER,
} from "../src/clients/acquirer-client.ts";
import { paymentsErrorRegistries } from "../src/errors.ts";
import { main } from "../src/main.ts";
import { acquirerOutcomeLabel, createPaymentMetrics, registerBreakerGauge } from "../src/metrics.ts";
import { countSagaBacklog } from "../src/store/backlog-counts.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import { RefundRetrier } from "../src/workers/refund-retrier.ts";
import { SagaOrchestrator } from "../src/workers/saga-orchestrator.ts";
import { startSim } from "./acquirer-sim-fixture.ts";
import { merchantKeyHeaders } from "./merchant-api-service.ts";
import {
  FAST_BACKOFF,
  FAST_CLIENT,
  paymentBody,
  seedPayment,
  TEST_INLINE_DRIVE_MS,
  TEST_PHASE_MS,
  testClient,
  waitFor,
} from "./payment-fixture.ts";
import { FAST_REFUND_BACKOFF, openFullTestDb as openTestDb } from "./payments-full-fixture.ts";

type LogLine = Record<string, unknown>;

/**
 * A client that times out waiting for the acquirer's answer after 300 ms (every other phase as
 * FAST_CLIENT's): for the test whose claim is that timeout, where a lost answer hangs.
 */
const HEADERS_TIMEOUT_CLIENT = testClient({
  connectMs: TEST_PHASE_MS,
  headersMs: 300,
  bodyMs: TEST_PHASE_MS,
});

/** The payments stack of payment-fixture.ts, with metrics on the service registry and a captured log. */
async function startObserved(
  t: import("node:test").TestContext,
  client: Partial<AcquirerClientOptions> = FAST_CLIENT,
) {
  const { db } = await openTestDb(t);
  const sim = await startSim(t);
  const lines: LogLine[] = [];
  const service = createService({
    name: "payments-test",
    version: "0.0.0",
    log: { level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    errors: paymentsErrorRegistries,
    defaultMetrics: false,
  });
  t.after(() => service.close());
  const metrics = createPaymentMetrics(service.registry, {
    clock: systemClock,
    backlog: () => countSagaBacklog(db, { nowMs: systemClock.nowMs() }),
  });
  const random = seededRandom("payment-metrics-test");
  const acquirer = new AcquirerClient({
    baseUrl: sim.url,
    clock: systemClock,
    random,
    ...client,
    observer: metrics,
    log: service.log,
  });
  t.after(() => acquirer.close());
  registerBreakerGauge(service.registry, () => acquirer.breaker.state);
  const idempotency = paymentsIdempotencyStore(db, { clock: systemClock });
  const orchestrator = new SagaOrchestrator({
    db,
    acquirer,
    idempotency,
    clock: systemClock,
    random,
    owner: uniqueName("orch"),
    leaseMs: 2_500,
    pollIntervalMs: 10,
    backoff: FAST_BACKOFF,
    observer: metrics,
    log: service.log,
  });
  t.after(() => orchestrator.stop());
  const retrier = new RefundRetrier({
    db,
    acquirer,
    clock: systemClock,
    random,
    owner: uniqueName("refunds"),
    backoff: FAST_REFUND_BACKOFF,
    observer: metrics,
    log: service.log,
  });
  // The API as main wires it (register-api.ts), on real merchant keys.
  const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
  await registerPaymentsApi(service.app, {
    db,
    ledger: new LedgerRepository(db),
    merchants,
    idempotency,
    orchestrator,
    acquirer,
    clock: systemClock,
    randomBytes,
    config: { inlineDriveMs: TEST_INLINE_DRIVE_MS, breakerOpenMode: "accept", refundRetryAfterMs: 0 },
  });
  const merchant = uniqueName("m");
  const authorized = merchantKeyHeaders(merchants, merchant);
  const pay = async (body: Record<string, unknown>, key: string, who = merchant) =>
    service.app.inject({
      method: "POST",
      url: "/v1/payments",
      payload: body,
      headers: await authorized({ "idempotency-key": key, "x-test-merchant": who }),
    });
  const refund = async (paymentId: unknown, key: string, amountMinor: string) =>
    service.app.inject({
      method: "POST",
      url: `/v1/payments/${paymentId}/refunds`,
      payload: { amountMinor },
      headers: await authorized({ "idempotency-key": key }),
    });
  const scrape = async () => (await service.app.inject({ method: "GET", url: "/metrics" })).body;
  return { db, idempotency, service, sim, orchestrator, retrier, merchant, lines, pay, refund, scrape };
}

/** The value of one sample line `name{labels} value` in a scrape ("" labels for an unlabelled metric). */
function sample(text: string, name: string, labels: string): number | undefined {
  const head = labels === "" ? `${name} ` : `${name}{${labels}} `;
  const line = text.split("\n").find((l) => l.startsWith(head));
  return line === undefined ? undefined : Number(line.slice(head.length));
}

test("PY-17 metrics: an approved and a declined payment show in /metrics by step, operation and outcome", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t);
  assert.equal((await f.pay(paymentBody(), "ok-1")).statusCode, 201);
  assert.equal((await f.pay(paymentBody({ cardToken: "tok_decline_funds" }), "no-1")).statusCode, 201);
  const text = await f.scrape();
  const authorize = (outcome: string) =>
    sample(text, "payments_acquirer_calls_total", `operation="authorize",outcome="${outcome}"`);
  assert.equal(authorize("approved"), 1);
  assert.equal(authorize("declined"), 1);
  assert.equal(sample(text, "payments_acquirer_calls_total", `operation="capture",outcome="approved"`), 1);
  assert.equal(sample(text, "payments_acquirer_call_duration_seconds_count", `operation="authorize"`), 2);
  const steps = (step: string, outcome: string) =>
    sample(text, "payments_saga_step_duration_seconds_count", `step="${step}",outcome="${outcome}"`);
  assert.equal(steps("authorize", "approved"), 1);
  assert.equal(steps("authorize", "declined"), 1);
  assert.equal(steps("capture", "captured"), 1);
  assert.equal(sample(text, "payments_acquirer_breaker_state", ""), 0, "closed");
  assert.equal(sample(text, "payments_saga_backlog", ""), 0, "both sagas finished");
});

test("PY-17 correlation id: every saga, acquirer and request line of a payment carries its acquirer key", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t);
  assert.equal((await f.pay(paymentBody({ cardToken: "tok_decline_x" }), "corr-1")).statusCode, 201);
  const correlationId = `${f.merchant}:corr-1`;
  const ours = f.lines.filter((l) => l.correlationId === correlationId);
  const messages = ours.map((l) => l.msg);
  assert.ok(messages.includes("saga step"), "the orchestrator's step line");
  assert.ok(messages.includes("acquirer call"), "the acquirer client's call line");
  assert.ok(messages.includes("request"), "the HTTP access line of POST /v1/payments");
  const step = ours.find((l) => l.msg === "saga step");
  assert.equal(step?.outcome, "declined");
  // No saga or acquirer line for the payment is written without its id.
  const uncorrelated = f.lines.filter(
    (l) => (l.msg === "saga step" || l.msg === "acquirer call") && l.correlationId !== correlationId,
  );
  assert.deepEqual(uncorrelated, []);
});

test("PY-17 the acquirer receives the correlation id as x-correlation-id on every operation", async (t) => {
  if (engineFree(t)) return;
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ outcome: "approved", status: "captured", id: "auth_1" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const calls: string[] = [];
  const client = new AcquirerClient({
    baseUrl: `http://127.0.0.1:${port}`,
    clock: systemClock,
    random: seededRandom("corr-header"),
    ...FAST_CLIENT,
    observer: { callFinished: (operation, outcome) => calls.push(`${operation}:${outcome}`) },
  });
  t.after(() => client.close());
  const key = "m1:key-1";
  await client.authorize({
    idempotencyKey: key,
    merchantId: "m1",
    amountMinor: 100n,
    currency: "BRL",
    cardToken: "tok",
  });
  await client.queryByKey(key);
  await client.capture("auth_1", key);
  await client.void("auth_1", "m\u00e9:odd\nkey");
  assert.deepEqual(
    seen.map((h) => h[CORRELATION_HEADER]),
    [key, key, key, encodeURIComponent("m\u00e9:odd\nkey")],
  );
  assert.deepEqual(calls, ["authorize:approved", "query:captured", "capture:captured", "void:captured"]);
});

test("PY-17 outcome labels: unknown counts as timeout, definitive answers as approved, refusals as error", (t) => {
  if (engineFree(t)) return;
  assert.equal(acquirerOutcomeLabel("unknown"), "timeout");
  assert.equal(acquirerOutcomeLabel("unavailable"), "unavailable");
  assert.equal(acquirerOutcomeLabel("declined"), "declined");
  for (const kind of ["approved", "captured", "voided", "refunded", "not-found"]) {
    assert.equal(acquirerOutcomeLabel(kind), "approved", kind);
  }
  assert.equal(acquirerOutcomeLabel("rejected"), "error");
  assert.equal(acquirerOutcomeLabel("error"), "error");
});

test("PY-17 saga backlog: counts due sagas, bounded by maxCount, cached between scrapes", async (t) => {
  if (engineFree(t)) return;
  const { db } = await openTestDb(t);
  const idempotency = paymentsIdempotencyStore(db, { clock: systemClock });
  const merchant = uniqueName("m");
  for (const key of ["b1", "b2", "b3"])
    await seedPayment(db, idempotency, { merchant, key, amountMinor: 100n });
  const nowMs = Date.now() + 1_000;
  assert.equal(await countSagaBacklog(db, { nowMs }), 3);
  assert.equal(await countSagaBacklog(db, { nowMs, maxCount: 2 }), 2, "the LIMIT bounds the count");
  const clock = new ManualClock(0);
  let counts = 0;
  const service = createService({ name: "m", version: "0", log: { level: "silent" }, defaultMetrics: false });
  t.after(() => service.close());
  createPaymentMetrics(service.registry, {
    clock,
    backlogCacheMs: 5_000,
    backlog: async () => {
      counts++;
      return countSagaBacklog(db, { nowMs });
    },
  });
  const scrape = async () => sample(await service.registry.metrics(), "payments_saga_backlog", "");
  assert.equal(await scrape(), 3);
  assert.equal(await scrape(), 3);
  assert.equal(counts, 1, "a second scrape within the cache window reuses the count");
  clock.advance(5_000);
  await scrape();
  assert.equal(counts, 2);
});

test("PY-17 main() wires the metrics: a payment through the composed service shows in /metrics", async (t) => {
  if (engineFree(t)) return;
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-metrics-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main({ PORT: "0", CASEBOOK_DATA: dataDir, LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const headers = {
    authorization: `Bearer ${running.bootstrap!.apiKey}`,
    "content-type": "application/json",
  };
  for (const [key, cardToken] of [
    ["main-ok", "tok_visa"],
    ["main-no", "tok_decline_x"],
  ]) {
    const res = await fetch(`${running.url}/v1/payments`, {
      method: "POST",
      headers: { ...headers, "idempotency-key": key! },
      body: JSON.stringify(paymentBody({ cardToken })),
    });
    assert.equal(res.status, 201, await res.text());
  }
  const text = await (await fetch(`${running.url}/metrics`)).text();
  const authorize = (outcome: string) =>
    sample(text, "payments_acquirer_calls_total", `operation="authorize",outcome="${outcome}"`);
  assert.equal(authorize("approved"), 1);
  assert.equal(authorize("declined"), 1);
  assert.equal(
    sample(text, "payments_saga_step_duration_seconds_count", `step="authorize",outcome="declined"`),
    1,
  );
  assert.equal(sample(text, "payments_acquirer_breaker_state", ""), 0);
  assert.equal(sample(text, "payments_saga_backlog", ""), 0);
});

test("PY-17 refund calls are tagged like authorizations; the refund's acquirer key correlates its request and call lines", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t);
  const paid = await f.pay(paymentBody(), "pm-1");
  assert.equal(paid.statusCode, 201);
  const refunded = await f.refund(paid.json().id, "rf-m1", "1000");
  assert.equal(refunded.statusCode, 201, refunded.body);
  const text = await f.scrape();
  assert.equal(sample(text, "payments_acquirer_calls_total", `operation="refund",outcome="approved"`), 1);
  assert.equal(sample(text, "payments_acquirer_call_duration_seconds_count", `operation="refund"`), 1);
  const correlationId = `${f.merchant}:pm-1:refund:rf-m1`;
  const ours = f.lines.filter((l) => l.correlationId === correlationId);
  assert.ok(
    ours.some((l) => l.msg === "acquirer call" && l.operation === "refund"),
    "the acquirer client's refund line",
  );
  assert.ok(
    ours.some((l) => l.msg === "request"),
    "the HTTP access line of the refund",
  );
  const uncorrelated = f.lines.filter(
    (l) => l.msg === "acquirer call" && l.operation === "refund" && l.correlationId !== correlationId,
  );
  assert.deepEqual(uncorrelated, []);
});

test("PY-17 the refund retry worker's calls and rounds show in /metrics, its lines carry the refund's correlation id", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t);
  const paid = await f.pay(paymentBody(), "pm-2");
  f.sim.sim.faults.update({ outage: true });
  const pending = await f.refund(paid.json().id, "rf-m2", "700");
  f.sim.sim.faults.update({ outage: false });
  assert.equal(pending.statusCode, 202);
  await waitFor(async () => {
    await f.retrier.runOnce();
    const { rows } = await f.db.query<{ status: string }>("SELECT status FROM payment_refunds");
    return rows[0]?.status === "succeeded" ? true : undefined;
  });
  const text = await f.scrape();
  const calls = (operation: string, outcome: string) =>
    sample(text, "payments_acquirer_calls_total", `operation="${operation}",outcome="${outcome}"`);
  assert.equal(calls("refund", "unavailable"), 1, "the request's call, refused by the outage");
  assert.equal(calls("refund_query", "approved"), 1, "the worker asked by key first (not found)");
  assert.equal(calls("refund", "approved"), 1, "then sent it once");
  assert.equal(sample(text, "payments_refund_retries_total", `outcome="succeeded"`), 1);
  const correlationId = `${f.merchant}:pm-2:refund:rf-m2`;
  const worker = f.lines.filter((l) => l.msg === "refund retried");
  assert.equal(worker.length, 1);
  assert.equal(worker[0]!.correlationId, correlationId);
  assert.equal(worker[0]!.outcome, "succeeded");
  const workerCalls = f.lines.filter(
    (l) => l.msg === "acquirer call" && (l.operation === "refund_query" || l.operation === "refund"),
  );
  assert.ok(workerCalls.length >= 2);
  assert.ok(workerCalls.every((l) => l.correlationId === correlationId));
});

test("PY-17 the acquirer receives a refund's correlation id on its send and its status query", async (t) => {
  if (engineFree(t)) return;
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ id: "rfnd_1" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const calls: string[] = [];
  const client = new AcquirerClient({
    baseUrl: `http://127.0.0.1:${port}`,
    clock: systemClock,
    random: seededRandom("corr-refund"),
    ...FAST_CLIENT,
    observer: { callFinished: (operation, outcome) => calls.push(`${operation}:${outcome}`) },
  });
  t.after(() => client.close());
  const key = "m1:key-1:refund:r-1";
  await client.refund("auth_1", { idempotencyKey: key, amountMinor: 100n, correlationId: key });
  await client.queryRefundByKey(key, key);
  assert.deepEqual(
    seen.map((h) => h[CORRELATION_HEADER]),
    [key, key],
  );
  assert.deepEqual(calls, ["refund:refunded", "refund_query:refunded"]);
});

test("PY-17 timeout rate: acquirer timeouts caused at the simulator (a charge whose answer is lost) count in /metrics", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t, HEADERS_TIMEOUT_CLIENT);
  f.orchestrator.start();
  // Every authorization is charged but its answer never comes: the client's headers timeout fires.
  f.sim.sim.faults.update({ timeoutAfterChargeRate: 1, timeoutMode: "hang" });
  const replies = await Promise.all(
    ["to-1", "to-2"].map((key) => f.pay(paymentBody({ capture: false }), key)),
  );
  for (const reply of replies) assert.ok([201, 202].includes(reply.statusCode), reply.body);
  await waitFor(async () => {
    const { rows } = await f.db.query<{ n: number }>(
      "SELECT count(*)::int4 AS n FROM payments WHERE status = 'authorized'",
    );
    return rows[0]!.n === 2 ? true : undefined;
  }, 30_000);
  const text = await f.scrape();
  const calls = (operation: string, outcome: string) =>
    sample(text, "payments_acquirer_calls_total", `operation="${operation}",outcome="${outcome}"`);
  assert.equal(calls("authorize", "timeout"), 2, "each lost answer is one timeout");
  assert.equal(calls("authorize", "approved"), undefined, "no authorize answer ever arrived");
  assert.equal(calls("query", "approved"), 2, "each was resolved by a status query by key");
  assert.equal(
    sample(text, "payments_saga_step_duration_seconds_count", `step="authorize",outcome="unknown"`),
    2,
  );
  assert.equal(f.sim.sim.state.stats().authorizations, 2, "one charge per payment");
});

test("PY-17 the correlation id is the merchant-scoped idempotency key: one Idempotency-Key from two merchants gives two ids, each the key the acquirer holds", async (t) => {
  if (engineFree(t)) return;
  const f = await startObserved(t);
  const other = uniqueName("m");
  for (const who of [f.merchant, other]) {
    const res = await f.pay(paymentBody({ capture: false }), "same-key", who);
    assert.equal(res.statusCode, 201, res.body);
  }
  const ids = new Set(f.lines.filter((l) => l.msg === "saga step").map((l) => l.correlationId as string));
  assert.deepEqual([...ids].sort(), [`${f.merchant}:same-key`, `${other}:same-key`].sort());
  for (const id of ids) {
    // The acquirer's idempotency key for the payment is its correlation id, so one id follows it everywhere.
    assert.equal(f.sim.sim.state.getByKey(id).status, "approved", id);
  }
});
