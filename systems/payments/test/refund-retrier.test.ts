/**
 * PY-15 the refund retry worker, against the REAL acquirer simulator over HTTP, on PGlite and on
 * PostgreSQL: a refund whose answer was lost (202) is asked for by key and booked without a second
 * send; one that never reached the acquirer is sent once, with its key; a definitive refusal fails
 * it and releases its reservation; past the bound it ends `unresolved`, visible, still reserved.
 * Then 3 worker PROCESSES race over 30 stuck refunds on PostgreSQL: each is settled once, and the
 * acquirer — which counts calls per refund key — saw every key exactly once.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { type ChildProcessWithPipes, spawnChild } from "@casebook/lab/spawn-child";
import { engineFree, requirePostgres } from "@casebook/lab/test-engines";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { decideRefundRetry } from "../src/domain/payment-saga.ts";
import { main } from "../src/main.ts";
import { startSim } from "./acquirer-sim-fixture.ts";
import { balances, FAST_CLIENT, paymentBody, waitFor } from "./payment-fixture.ts";
import { type FullFixture, startFullPayments, testOnEngines } from "./payments-full-fixture.ts";

const CHILD = fileURLToPath(new URL("./refund-retrier-child.ts", import.meta.url));

test("PY-15 refund retry decisions: ask first, send only what the acquirer never saw, fail only on a refused send, give up at the bound", (t) => {
  if (engineFree(t)) return;
  const policy = new BackoffPolicy({ baseMs: 10, capMs: 100, jitter: "none", maxAttempts: 3 });
  const ctx = { attempts: 0, elapsedMs: 0, policy };
  assert.deepEqual(decideRefundRetry("query", { kind: "refunded", refundId: "r1" }, ctx), {
    action: "complete",
    refundId: "r1",
  });
  assert.deepEqual(decideRefundRetry("query", { kind: "not-found" }, ctx), { action: "send" });
  assert.equal(decideRefundRetry("query", { kind: "rejected", code: "X" }, ctx).action, "retry");
  assert.deepEqual(decideRefundRetry("send", { kind: "rejected", code: "ACQUIRER_NOT_CAPTURED" }, ctx), {
    action: "fail",
    failure: "acquirer refused: ACQUIRER_NOT_CAPTURED",
  });
  assert.deepEqual(decideRefundRetry("query", { kind: "unknown", reason: "headers timeout" }, ctx), {
    action: "retry",
    attempts: 1,
    delayMs: 10,
    reason: "headers timeout",
  });
  const late = decideRefundRetry("send", { kind: "unavailable", reason: "503", retryAfterMs: 500 }, ctx);
  assert.equal(late.action === "retry" && late.delayMs, 500, "the acquirer's Retry-After is honoured");
  const spent = decideRefundRetry("query", { kind: "unknown", reason: "reset" }, { ...ctx, attempts: 2 });
  assert.equal(spent.action, "give-up");
  assert.equal(spent.action === "give-up" && spent.attempts, 3);
});

test("PY-15 the acquirer answers a refund's status by its key: not found before, the refund after", async (t) => {
  if (engineFree(t)) return;
  const sim = await startSim(t);
  const client = new AcquirerClient({
    baseUrl: sim.url,
    clock: systemClock,
    random: seededRandom("refund-query"),
    ...FAST_CLIENT,
  });
  t.after(() => client.close());
  const authorized = await client.authorize({
    idempotencyKey: "m1:k1",
    merchantId: "m1",
    amountMinor: 1000n,
    currency: "BRL",
    cardToken: "tok_visa",
  });
  assert.equal(authorized.kind, "approved");
  const authorizationId = authorized.kind === "approved" ? authorized.authorizationId : "";
  assert.equal((await client.capture(authorizationId, "m1:k1")).kind, "captured");
  assert.deepEqual(await client.queryRefundByKey("m1:k1:refund:r1"), { kind: "not-found" });
  const refunded = await client.refund(authorizationId, {
    idempotencyKey: "m1:k1:refund:r1",
    amountMinor: 400n,
  });
  assert.equal(refunded.kind, "refunded");
  assert.deepEqual(await client.queryRefundByKey("m1:k1:refund:r1"), refunded);
  assert.equal(sim.sim.state.getRefundByKey("m1:k1:refund:r1").attempts, 1, "a query is not a refund call");
});

/** A captured payment of `amount`; returns its id and acquirer key. */
async function capturedPayment(f: FullFixture, key: string, amount = "5000") {
  const paid = await f.pay(paymentBody({ amountMinor: amount }), key);
  assert.equal(paid.body.status, "captured", paid.text);
  return { id: String(paid.body.id), acquirerKey: `${f.merchant}:${key}` };
}

function refundCall(f: FullFixture, paymentId: string, key: string, amountMinor: string) {
  return f.call("POST", `/v1/payments/${paymentId}/refunds`, { amountMinor }, { "idempotency-key": key });
}

/** Runs the worker round by round (no sleeping beyond its backoff) until the refund leaves `pending`. */
async function retryUntilSettled(f: FullFixture, paymentId: string, refundId: string) {
  return waitFor(
    async () => {
      await f.retrier.runOnce();
      const got = await f.call("GET", `/v1/payments/${paymentId}/refunds/${refundId}`);
      return got.body.status === "pending" ? undefined : got.body;
    },
    15_000,
    5,
  );
}

/** The ledger reversals of the payment with public id `paymentId`: their keys hold its internal id (`pay:<id>:refund:…`). */
async function reversals(f: FullFixture, paymentId: string): Promise<bigint> {
  const { rows } = await f.db.query<{ n: bigint }>(
    `SELECT count(*) AS n FROM transactions t JOIN payments p ON p.public_id = $1
      WHERE t.idem_key LIKE 'pay:' || p.id || ':refund:%'`,
    [paymentId],
  );
  return rows[0]!.n;
}

testOnEngines(
  "PY-15 a refund whose answer was lost answers 202; the retry worker asks by key and books it without sending it again",
  async (t, url) => {
    const f = await startFullPayments(t, { url });
    const payment = await capturedPayment(f, "rr-lost");
    f.sim.sim.faults.update({ timeoutAfterChargeRate: 1, timeoutMode: "reset" });
    const pending = await refundCall(f, payment.id, "rf-lost", "2000");
    f.sim.sim.faults.update({ timeoutAfterChargeRate: 0 });
    assert.equal(pending.status, 202);
    assert.equal(pending.body.status, "pending");
    const refundKey = `${payment.acquirerKey}:refund:rf-lost`;
    assert.equal(f.sim.sim.state.getRefundByKey(refundKey).attempts, 1, "the acquirer did refund");
    assert.equal(await reversals(f, payment.id), 0n, "nothing booked while the outcome is unknown");
    assert.equal((await f.call("GET", `/v1/payments/${payment.id}`)).body.refundedMinor, "2000", "reserved");
    const settled = await retryUntilSettled(f, payment.id, String(pending.body.id));
    assert.equal(settled.status, "succeeded");
    assert.equal(settled.acquirerRefundId, f.sim.sim.state.getRefundByKey(refundKey).id);
    assert.equal(f.sim.sim.state.getRefundByKey(refundKey).attempts, 1, "asked by key, never sent again");
    assert.equal(f.sim.sim.state.stats().refunds, 1);
    assert.equal(await reversals(f, payment.id), 1n);
    assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 3000n);
    const retried = await refundCall(f, payment.id, "rf-lost", "2000");
    assert.equal(retried.status, 201, "the client's retry gets the final answer");
    assert.equal((await refundCall(f, payment.id, "rf-lost", "2000")).text, retried.text, "then replays it");
    assert.equal(await f.retrier.runOnce(), 0, "nothing left to retry");
  },
);

testOnEngines(
  "PY-15 a refund that never reached the acquirer (outage) is sent by the worker, with its key, once",
  async (t, url) => {
    const f = await startFullPayments(t, { url });
    const payment = await capturedPayment(f, "rr-outage");
    f.sim.sim.faults.update({ outage: true });
    const pending = await refundCall(f, payment.id, "rf-out", "1500");
    f.sim.sim.faults.update({ outage: false });
    assert.equal(pending.status, 202);
    assert.equal(f.sim.sim.state.stats().refundAttempts, 0, "refused before processing");
    const settled = await retryUntilSettled(f, payment.id, String(pending.body.id));
    assert.equal(settled.status, "succeeded");
    assert.equal(f.sim.sim.state.getRefundByKey(`${payment.acquirerKey}:refund:rf-out`).attempts, 1);
    assert.equal(f.sim.sim.state.stats().refunds, 1);
    assert.equal(await reversals(f, payment.id), 1n);
    const view = await f.call("GET", `/v1/payments/${payment.id}`);
    assert.equal(view.body.status, "partially_refunded");
  },
);

testOnEngines(
  "PY-15 the acquirer refuses the worker's send for good: the refund fails and its reservation is released",
  async (t, url) => {
    const f = await startFullPayments(t, { url });
    const payment = await capturedPayment(f, "rr-refused");
    f.sim.sim.faults.update({ outage: true });
    const pending = await refundCall(f, payment.id, "rf-no", "3000");
    f.sim.sim.faults.update({ outage: false });
    assert.equal(pending.status, 202);
    // Meanwhile 2500 of the 5000 were refunded at the acquirer by other means: 3000 no longer fits.
    const authorizationId = f.sim.sim.state.getByKey(payment.acquirerKey).id;
    f.sim.sim.state.refund(authorizationId, { idempotencyKey: "elsewhere", amountMinor: 2500n });
    const settled = await retryUntilSettled(f, payment.id, String(pending.body.id));
    assert.equal(settled.status, "failed");
    assert.match(String(settled.failure), /ACQUIRER_REFUND_EXCEEDS_CAPTURED/);
    assert.equal((await f.call("GET", `/v1/payments/${payment.id}`)).body.refundedMinor, "0", "released");
    assert.equal(await reversals(f, payment.id), 0n);
    const retried = await refundCall(f, payment.id, "rf-no", "3000");
    assert.equal(retried.status, 422);
    assert.equal(retried.body.status, "failed");
  },
);

testOnEngines(
  "PY-15 past its bound a refund whose outcome stays unknown ends unresolved: visible, still reserved, never booked",
  async (t, url) => {
    const f = await startFullPayments(t, {
      url,
      retrier: { backoff: { baseMs: 5, capMs: 10, maxAttempts: 2, budgetMs: 60_000 } },
    });
    const payment = await capturedPayment(f, "rr-stuck");
    f.sim.sim.faults.update({ outage: true });
    const pending = await refundCall(f, payment.id, "rf-stuck", "1000");
    assert.equal(pending.status, 202);
    const settled = await retryUntilSettled(f, payment.id, String(pending.body.id));
    assert.equal(settled.status, "unresolved");
    assert.match(String(settled.failure), /outcome still unknown after 2 attempts/);
    assert.equal((await f.call("GET", `/v1/payments/${payment.id}`)).body.refundedMinor, "1000", "kept");
    assert.equal(await reversals(f, payment.id), 0n);
    assert.equal(await f.retrier.runOnce(), 0, "terminal: the worker never claims it again");
    f.sim.sim.faults.update({ outage: false });
    const retried = await refundCall(f, payment.id, "rf-stuck", "1000");
    assert.equal(retried.status, 202, "not an answer to store: the D+1 file decides");
    assert.equal(retried.body.status, "unresolved");
  },
);

type Child = ChildProcessWithPipes;

interface Worker {
  child: Child;
  settled: number;
  stopped: Promise<void>;
}

/** Spawns a retry worker process; resolves once it printed "ready" (it starts on "go"). Counts its "round succeeded" lines. */
async function spawnWorker(args: string[], workers: Worker[]): Promise<Worker> {
  let stopped: () => void = () => {};
  const counts = { settled: 0, stopped: new Promise<void>((resolve) => (stopped = resolve)) };
  const spawned = await spawnChild(CHILD, {
    args,
    ready: "ready",
    readyTimeoutMs: 20_000,
    onLine: (line) => {
      if (line === "round succeeded") counts.settled += 1;
      else if (line === "stopped") stopped();
    },
  });
  const worker: Worker = Object.assign(counts, { child: spawned.process });
  workers.push(worker);
  void spawned.exited.then(() => stopped());
  return worker;
}

test("PY-15 3 retry-worker processes racing over 30 stuck refunds on PostgreSQL: each settled once, each refund key seen once by the acquirer", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const workers: Worker[] = [];
  t.after(() => {
    for (const { child } of workers)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  // A breaker that never opens here: every stuck refund is either lost after processing or refused before.
  const f = await startFullPayments(t, { url, client: { breaker: { failureThreshold: 1_000_000 } } });
  const refundKeys: string[] = [];
  let refundedTotal = 0n;
  for (let p = 0; p < 10; p++) {
    const payment = await capturedPayment(f, `race-${p}`, "9000");
    for (const [r, amount] of ["1000", "2000", "3000"].entries()) {
      const lost = (p * 3 + r) % 2 === 0;
      f.sim.sim.faults.update(lost ? { timeoutAfterChargeRate: 1, timeoutMode: "reset" } : { outage: true });
      const reply = await refundCall(f, payment.id, `rk-${p}-${r}`, amount);
      f.sim.sim.faults.update({ timeoutAfterChargeRate: 0, outage: false });
      assert.equal(reply.status, 202, reply.text);
      refundKeys.push(`${payment.acquirerKey}:refund:rk-${p}-${r}`);
      refundedTotal += BigInt(amount);
    }
  }
  assert.equal(f.sim.sim.state.stats().refunds, 15, "half the refunds reached the acquirer, half did not");
  await Promise.all(
    ["rw-1", "rw-2", "rw-3"].map((owner) => spawnWorker([url, f.schema!, f.sim.url, owner], workers)),
  );
  for (const { child } of workers) child.stdin.write("go\n"); // all ready: they start together
  await waitFor(
    async () => {
      const { rows } = await f.db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM payment_refunds WHERE status = 'pending'",
      );
      return rows[0]!.n === 0n ? true : undefined;
    },
    30_000,
    50,
  );
  for (const { child } of workers) child.stdin.write("stop\n");
  await Promise.all(workers.map((w) => w.stopped));
  const { rows } = await f.db.query<{ status: string; n: bigint; reversals: bigint }>(
    `SELECT status, count(*) AS n, count(DISTINCT ledger_transaction_id) AS reversals
       FROM payment_refunds GROUP BY status`,
  );
  assert.deepEqual(
    rows.map((r) => ({ ...r })),
    [{ status: "succeeded", n: 30n, reversals: 30n }],
  );
  assert.equal(
    workers.reduce((sum, w) => sum + w.settled, 0),
    30,
    "30 settling rounds in all: none twice",
  );
  assert.ok(workers.filter((w) => w.settled > 0).length >= 2, "the work was shared between processes");
  const stats = f.sim.sim.state.stats();
  assert.equal(stats.refunds, 30);
  assert.equal(stats.refundAttempts, 30, "one refund call per key, in all");
  for (const key of refundKeys) assert.equal(f.sim.sim.state.getRefundByKey(key).attempts, 1, key);
  const { rows: ledger } = await f.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM transactions WHERE reverses_id IS NOT NULL",
  );
  assert.equal(ledger[0]!.n, 30n);
  const b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.posted, 90_000n - refundedTotal);
});

test("PY-15 main() runs the refund retry worker: a refund left pending by an outage is settled without the client", async (t) => {
  if (engineFree(t)) return;
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-refunds-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const sim = await startSim(t);
  sim.clock.advance(Date.now() - sim.clock.nowMs());
  const running = await main({
    PORT: "0",
    CASEBOOK_DATA: dir,
    LOG_LEVEL: "silent",
    ACQUIRER_URL: sim.url,
    PAYMENTS_REFUND_RETRY_AFTER_MS: "0",
  });
  t.after(() => running.close());
  const headers = {
    authorization: `Bearer ${running.bootstrap!.apiKey}`,
    "content-type": "application/json",
  };
  const post = async (path: string, key: string, body: unknown) => {
    const res = await fetch(`${running.url}${path}`, {
      method: "POST",
      headers: { ...headers, "idempotency-key": key },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const paid = await post("/v1/payments", "main-rr-1", paymentBody());
  assert.equal(paid.body.status, "captured");
  sim.sim.faults.update({ outage: true });
  const pending = await post(`/v1/payments/${paid.body.id}/refunds`, "main-rf-1", { amountMinor: "900" });
  sim.sim.faults.update({ outage: false });
  assert.equal(pending.status, 202);
  const path = `${running.url}/v1/payments/${paid.body.id}/refunds/${pending.body.id}`;
  const settled = await waitFor(
    async () => {
      const got = (await (await fetch(path, { headers })).json()) as Record<string, unknown>;
      return got.status === "succeeded" ? got : undefined;
    },
    20_000,
    100,
  );
  assert.equal(settled.amountMinor, "900");
  assert.equal(sim.sim.state.stats().refunds, 1);
});
