/**
 * The charge queue under a failing processor (FS-15, FS-18), charging through
 * PaymentsCharger over HTTP to a stand-in of payments' public API:
 *
 * - payments down, then slow (answers after the caller's timeout), then back: the queue
 *   retries each charge under the same key with a bounded delay, the charging holds stay
 *   frozen (the reconciler never takes them back), a hold never paid expires and its ticket
 *   returns, nothing is oversold, and each hold is charged once when payments returns;
 * - a charge worker PROCESS SIGKILLed right after the processor approved, before it wrote
 *   anything: its lease expires, another worker asks again under the same key, gets the same
 *   payment, writes the one order;
 * - a charge worker PROCESS SIGKILLed right after payments answered a refund (FS-18's
 *   compensation), before it wrote that it was done: another worker refunds again under the
 *   same key, and the hold is compensated once, its ticket back once.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { spawnChild } from "@casebook/lab/spawn-child";
import { engineFree } from "@casebook/lab/test-engines";
import { PaymentsCharger } from "../src/clients/payments-charger.ts";
import { auditSale, getHold, startCharge } from "../src/store/sale-repository.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";
import { embeddedFlash, type Flash, occupyNumber, realFlash } from "./flash-backends.ts";
import { startPaymentsStandIn } from "./payments-stand-in.ts";

const RETRY_CAP_MS = 400;
/**
 * The charger's bound on a payments call. The stand-in runs in this process: after a stall the
 * timer runs before the socket is read, so at 300 ms a loaded host could time a slow-phase call
 * out before payments saw it, and "payments made each charge" failed with the claim intact.
 */
const TIMEOUT_MS = 1_000;

function worker(f: Flash, paymentsUrl: string, leaseMs = 30_000) {
  const charger = new PaymentsCharger({
    url: paymentsUrl,
    apiKey: "test-key",
    cardToken: "tok_visa",
    timeoutMs: TIMEOUT_MS,
  });
  // The sale's clock decides what is due; real time paces the rate.
  const clock = { nowMs: () => f.clock.nowMs(), monotonicMs: () => systemClock.monotonicMs() };
  const w = new ChargeWorker({
    db: f.db,
    stock: f.stock,
    charger,
    clock,
    ratePerS: 1_000,
    maxBatch: 100,
    leaseMs,
    idleMs: 20,
    retryBaseMs: 100,
    retryCapMs: RETRY_CAP_MS,
  });
  return { w, close: () => charger.close() };
}

async function paying(f: Flash, saleId: string, buyer: string): Promise<string> {
  const r = await f.checkout.reserve({ saleId, buyer, quantity: 1, holdTtlMs: 60_000 });
  assert.equal(r.kind, "held");
  const holdId = (r as { holdId: string }).holdId;
  assert.equal((await startCharge(f.db, { holdId, nowMs: f.clock.nowMs() })).won, true);
  return holdId;
}

async function pendingCharges(f: Flash) {
  const { rows } = await f.db.query<{ hold_id: string; attempts: number; due_in_ms: number }>(
    `SELECT hold_id, attempts, (extract(epoch FROM next_attempt_at) * 1000 - $1::float8)::float8 AS due_in_ms
       FROM charges WHERE step <> 'done' ORDER BY seq`,
    [f.clock.nowMs()],
  );
  return rows;
}

test("FS-15 FS-18 payments down, then slow, then back: retries under the same key within the bound, charging holds frozen, an unpaid hold expires, nothing oversold, each hold charged once", async (t) => {
  if (engineFree(t)) return;
  const opened = await embeddedFlash.open(t);
  const f = opened!.subject;
  const payments = await startPaymentsStandIn();
  const { w, close } = worker(f, payments.url);
  t.after(async () => {
    close();
    await payments.close();
    await opened!.close();
  });
  const sale = await f.sale(4, { holdTtlMs: 60_000 });
  const paid = [await paying(f, sale.id, "a"), await paying(f, sale.id, "b"), await paying(f, sale.id, "c")];
  const unpaid = await f.checkout.reserve({ saleId: sale.id, buyer: "d", quantity: 1, holdTtlMs: 60_000 });
  assert.equal(unpaid.kind, "held");

  payments.mode = "down";
  for (let round = 0; round < 3; round++) {
    const r = await w.runOnce();
    assert.equal(r.retried, 3, "each charge failed and was put back, none lost");
    await f.passMs(RETRY_CAP_MS + 1);
  }
  for (const row of await pendingCharges(f)) {
    assert.equal(row.attempts, 3);
    assert.ok(
      row.due_in_ms <= RETRY_CAP_MS,
      `the next try is at most ${RETRY_CAP_MS} ms away: ${row.due_in_ms}`,
    );
  }
  // The unpaid hold's deadline passes while payments is down: its ticket comes back; the
  // charging ones are frozen — taking them back could sell a ticket someone is paying for.
  await f.passMs(60_000);
  await f.reconciler.runOnce();
  assert.equal((await getHold(f.db, (unpaid as { holdId: string }).holdId))?.state, "released");
  for (const id of paid) assert.equal((await getHold(f.db, id))?.state, "charging");
  assert.equal((await f.stock.view(sale.id)).available, 1);

  payments.mode = "slow";
  payments.slowMs = TIMEOUT_MS * 3;
  const slow = await w.runOnce();
  assert.equal(slow.retried, 3, "timeouts are retried, not failures");
  assert.equal(payments.payments.size, 3, "payments made each charge; its answers came too late");

  payments.mode = "up";
  for (let i = 0; i < 20 && (await pendingCharges(f)).length > 0; i++) {
    await f.passMs(RETRY_CAP_MS + 1);
    await w.runOnce();
  }
  for (const id of paid) {
    assert.equal((await getHold(f.db, id))?.state, "paid");
    // At least the slow try and the last one reached payments (a try in the down phase may
    // time out connecting on a loaded machine before payments sees it).
    assert.ok((payments.chargeRequests.get(id) ?? 0) >= 2, "asked again, with the hold id");
  }
  assert.deepEqual(new Set(payments.chargeRequests.keys()), new Set(paid), "every request keyed by its hold");
  assert.equal(payments.payments.size, 3, "charged once each");
  const audit = await auditSale(f.db, sale.id);
  assert.deepEqual([audit.orders, audit.soldTickets, audit.duplicateNumbers, audit.leaked], [3, 3, 0, 0]);
  assert.equal((await f.stock.view(sale.id)).available, 1, "the expired hold's ticket is still for sale");
});

const KILL_LEASE_MS = 2_000;

/** Real engines, payments' stand-in and a surviving worker on a short lease; undefined (skipped) without the engines. */
async function killWorld(t: TestContext) {
  const opened = await realFlash.open(t);
  if (opened === undefined) return undefined;
  const f = opened.subject;
  const payments = await startPaymentsStandIn();
  const { w, close } = worker(f, payments.url, KILL_LEASE_MS);
  t.after(async () => {
    close();
    await payments.close();
    await opened.close();
  });
  return { f, payments, w };
}

/** A charge worker PROCESS (charge-worker-child.ts) that SIGKILLs itself at `dieAt`; resolves once it is dead. */
async function killedWorker(
  t: TestContext,
  f: Flash,
  paymentsUrl: string,
  dieAt: "after-approval" | "after-refund",
) {
  const e = f.engines!;
  const child = await spawnChild(new URL("./charge-worker-child.ts", import.meta.url), {
    args: [e.pgUrl, e.schema, e.redisUrl, e.keyPrefix, paymentsUrl, String(KILL_LEASE_MS), dieAt],
    ready: "ready",
    readyTimeoutMs: 60_000,
    test: t,
  });
  const exit = await child.exited;
  assert.equal(exit.signal, "SIGKILL", child.stderr());
}

/** The step the hold's charge row is at (the last one a worker wrote). */
async function chargeStep(f: Flash, holdId: string): Promise<string | undefined> {
  const { rows } = await f.db.query<{ step: string }>("SELECT step FROM charges WHERE hold_id = $1", [
    holdId,
  ]);
  return rows[0]?.step;
}

/**
 * The dead worker's lease holds its row; once it has passed, the survivor drains the queue. The
 * lease runs on real time from the child's claim: judged when the survivor's try ended inside it
 * (on a loaded host the child's exit and the checks before may take the whole lease).
 */
async function drainAfterTheLease(t: TestContext, f: Flash, w: ChargeWorker) {
  const { rows } = await f.db.query<{ ms: number }>(
    "SELECT (extract(epoch FROM max(lease_expires_at)) * 1000)::float8 AS ms FROM charges WHERE step <> 'done'",
  );
  const leaseEndsMs = rows[0]!.ms;
  const claimed = (await w.runOnce()).claimed;
  if (Date.now() < leaseEndsMs) assert.equal(claimed, 0, "the dead worker's lease still holds the row");
  else t.diagnostic("the survivor's first try ended after the lease: the lease's hold was not judged");
  await f.passMs(KILL_LEASE_MS);
  for (let i = 0; i < 20 && (await pendingCharges(f)).length > 0; i++) {
    if ((await w.runOnce()).claimed === 0) await f.passMs(100);
  }
}

test("FS-18 a charge worker process SIGKILLed between the processor's approval and any write: the lease expires, another worker charges under the same key, one payment, one order", async (t) => {
  const world = await killWorld(t);
  if (world === undefined) return;
  const { f, payments, w } = world;
  const sale = await f.sale(2);
  const holdId = await paying(f, sale.id, "buyer");
  await killedWorker(t, f, payments.url, "after-approval");
  assert.deepEqual([payments.payments.size, payments.chargeRequests.get(holdId)], [1, 1], "approved once");
  assert.equal(await chargeStep(f, holdId), "charge", "the dead worker wrote nothing after the approval");

  await drainAfterTheLease(t, f, w);
  assert.equal((await getHold(f.db, holdId))?.state, "paid");
  assert.deepEqual(
    [payments.payments.size, payments.chargeRequests.get(holdId)],
    [1, 2],
    "asked twice under the hold id, charged once",
  );
  const audit = await auditSale(f.db, sale.id);
  assert.deepEqual([audit.orders, audit.duplicateNumbers, audit.leaked], [1, 0, 0]);
  assert.deepEqual(await f.stock.view(sale.id), { available: 1, epoch: sale.stockEpoch, holds: 0 });
});

test("FS-18 a charge worker process SIGKILLed between payments' refund answer and its own done write: after the lease another worker refunds under the same key, the hold compensated once, its ticket back once", async (t) => {
  const world = await killWorld(t);
  if (world === undefined) return;
  const { f, payments, w } = world;
  const sale = await f.sale(2);
  const holdId = await paying(f, sale.id, "victim");
  // The order write will be refused (FS-10): the approved charge must be refunded.
  await occupyNumber(f.db, sale.id, (await getHold(f.db, holdId))!.numbers[0]!);
  await killedWorker(t, f, payments.url, "after-refund");
  const refundKey = `refund:${holdId}`;
  assert.deepEqual([...payments.refunds], [[refundKey, 1]], "refunded once before the kill");
  assert.equal(await chargeStep(f, holdId), "refund", "the dead worker never wrote that the refund was done");
  assert.equal((await getHold(f.db, holdId))?.state, "charging");
  assert.deepEqual(await f.stock.view(sale.id), { available: 1, epoch: sale.stockEpoch, holds: 1 });

  await drainAfterTheLease(t, f, w);
  assert.deepEqual(
    [...payments.refunds],
    [[refundKey, 2]],
    "asked twice, under the one key payments dedupes on: one refund",
  );
  assert.deepEqual(
    [(await getHold(f.db, holdId))?.state, (await getHold(f.db, holdId))?.releaseReason],
    ["released", "compensated"],
  );
  const audit = await auditSale(f.db, sale.id);
  assert.deepEqual([audit.orders, audit.duplicateNumbers, audit.leaked], [1, 0, 0], "the ghost's order only");
  // The ghost's order lives in SQL only: the stock counts the victim's ticket, now back.
  assert.deepEqual(
    await f.stock.view(sale.id),
    { available: 2, epoch: sale.stockEpoch, holds: 0 },
    "the ticket back once",
  );
});
