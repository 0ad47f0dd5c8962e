/**
 * FS-15's drain against the real payments service (its own process, its acquirer simulator
 * its own process): a sale's holds all put in the charge queue at once, then one ChargeWorker
 * drains them at a configured rate, through payments' public API, until every charge is done.
 * What a drain reports: charges/s sustained (charges ÷ time to drain), the p99 of one charge
 * call, the acquirer's busiest second (from its own arrivals record) and its counters; and
 * payments' own saga throughput — `POST /v1/payments` straight at it, closed loop — to put
 * beside it.
 *
 * @example
 * const step = await drainAtRate(flash, payments, { saleId: "d40", ratePerS: 40, charges: 400, maxInFlight: 8 });
 * step.drainedPerS; step.busiestSecond; step.authorizations === 400;
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { runClosedLoop } from "@casebook/lab/load-generator";
import { PaymentsCharger } from "../src/clients/payments-charger.ts";
import { Checkout } from "../src/domain/checkout.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { createSale, startCharge } from "../src/store/sale-repository.ts";
import type { StockStore } from "../src/store/stock-store.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";
import { AUTHORIZE, CAPTURE, type PaymentsDeployment } from "./payments-deployment.ts";

export interface FlashStores {
  db: Database;
  stock: StockStore;
}

export interface DrainOptions {
  saleId: string;
  ratePerS: number;
  charges: number;
  maxInFlight: number;
  /** Bound on the whole drain; default 3 × charges / rate + 30 s. */
  timeoutMs?: number;
  /** One charge call's bound (PaymentsCharger). */
  chargeTimeoutMs?: number;
}

export interface DrainStep {
  readonly ratePerS: number;
  readonly charges: number;
  readonly elapsedMs: number;
  readonly drainedPerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  /** The acquirer's most authorizations (and captures) in one whole second. */
  readonly busiestSecond: { authorizations: number; captures: number };
  readonly authorizations: number;
  readonly authorizationCalls: number;
  readonly captures: number;
  /** Charge calls answered "pending" or failed, asked again under the same key. */
  readonly retried: number;
  readonly orders: number;
}

/** A sale of `tickets` tickets at 50.00 USD, its stock in the hot store. */
export async function createChargeSale(f: FlashStores, saleId: string, tickets: number): Promise<void> {
  const sale = await createSale(
    f.db,
    {
      id: saleId,
      name: saleId,
      tickets,
      perBuyerMax: 1,
      holdTtlMs: 3_600_000,
      priceMinor: 5_000n,
      currency: "USD",
      opensAtMs: 0,
    },
    systemClock.nowMs(),
  );
  if (!sale) throw new Error(`sale ${saleId} exists`);
  await f.stock.restore(saleId, {
    epoch: sale.stockEpoch,
    available: tickets,
    carried: [],
    recheckMs: 600_000,
  });
}

/** `count` buyers from `first` on each hold one ticket and pay: each charge queued. */
export async function queueCharges(
  f: FlashStores,
  saleId: string,
  count: number,
  first = 0,
): Promise<string[]> {
  const ledger = new HoldLedger({ db: f.db, stock: f.stock, clock: systemClock, recheckMs: 600_000 });
  let seq = 0;
  const checkout = new Checkout({
    stock: f.stock,
    ledger,
    clock: systemClock,
    newHoldId: () => `${saleId}_${first}_${seq++}`,
  });
  const holds: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const i = first + next++;
        const r = await checkout.reserve({ saleId, buyer: `b${i}`, quantity: 1, holdTtlMs: 3_600_000 });
        if (r.kind !== "held") throw new Error(`hold ${i}: ${r.kind}`);
        if (!(await startCharge(f.db, { holdId: r.holdId, nowMs: systemClock.nowMs() })).won)
          throw new Error(`hold ${r.holdId} not queued`);
        holds.push(r.holdId);
      }
    }),
  );
  return holds;
}

async function undone(db: Database, saleId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int4 AS n FROM charges WHERE sale_id = $1 AND step <> 'done'",
    [saleId],
  );
  return rows[0]!.n;
}

/** The busiest whole second of the acquirer's arrivals, per operation. */
export function busiestSecond(seconds: readonly { operations: Readonly<Record<string, number>> }[]): {
  authorizations: number;
  captures: number;
} {
  let authorizations = 0;
  let captures = 0;
  for (const s of seconds) {
    authorizations = Math.max(authorizations, s.operations[AUTHORIZE] ?? 0);
    captures = Math.max(captures, s.operations[CAPTURE] ?? 0);
  }
  return { authorizations, captures };
}

/** Queues `charges` charges, then drains them at `ratePerS` through payments; what it took. */
export async function drainAtRate(
  f: FlashStores,
  payments: PaymentsDeployment,
  o: DrainOptions,
): Promise<DrainStep> {
  await createChargeSale(f, o.saleId, o.charges);
  await queueCharges(f, o.saleId, o.charges);
  await payments.resetAcquirer();
  const latencies: number[] = [];
  const http = new PaymentsCharger({
    url: payments.url,
    apiKey: payments.apiKey,
    cardToken: "tok_visa",
    timeoutMs: o.chargeTimeoutMs ?? 10_000,
  });
  const timed = {
    charge: async (input: Parameters<PaymentsCharger["charge"]>[0]) => {
      const t0 = performance.now();
      try {
        return await http.charge(input);
      } finally {
        latencies.push(performance.now() - t0);
      }
    },
    refund: (input: Parameters<PaymentsCharger["refund"]>[0]) => http.refund(input),
  };
  const worker = new ChargeWorker({
    db: f.db,
    stock: f.stock,
    charger: timed,
    clock: systemClock,
    ratePerS: o.ratePerS,
    maxBatch: Math.max(1, Math.ceil(o.ratePerS)),
    maxInFlight: o.maxInFlight,
    leaseMs: 60_000,
    idleMs: 10,
    retryBaseMs: 100,
    retryCapMs: 1_000,
  });
  const timeoutMs = o.timeoutMs ?? (3 * o.charges * 1_000) / o.ratePerS + 30_000;
  const started = performance.now();
  worker.start();
  try {
    while ((await undone(f.db, o.saleId)) > 0) {
      if (performance.now() - started > timeoutMs)
        throw new Error(`drain at ${o.ratePerS}/s: not done after ${Math.round(timeoutMs)} ms`);
      await sleep(50);
    }
  } finally {
    await worker.stop();
    http.close();
  }
  const elapsedMs = performance.now() - started;
  const stats = await payments.acquirerStats();
  const { rows } = await f.db.query<{ n: number; pending: number }>(
    `SELECT count(*)::int4 AS n, (SELECT coalesce(sum(attempts), 0)::int4 FROM charges WHERE sale_id = $1) AS pending
       FROM orders WHERE sale_id = $1`,
    [o.saleId],
  );
  latencies.sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    ratePerS: o.ratePerS,
    charges: o.charges,
    elapsedMs,
    drainedPerS: (o.charges * 1_000) / elapsedMs,
    p50Ms: p(0.5),
    p99Ms: p(0.99),
    meanMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
    busiestSecond: busiestSecond(await payments.arrivals()),
    authorizations: stats.authorizations,
    authorizationCalls: stats.authorizationAttempts,
    captures: stats.captures,
    retried: rows[0]!.pending,
    orders: rows[0]!.n,
  };
}

/** Payments' own saga throughput: `POST /v1/payments` (capture) straight at it, closed loop. */
export async function sagaThroughput(
  payments: PaymentsDeployment,
  o: { clients: number; durationMs: number; warmupMs: number },
): Promise<{ perS: number; p99Ms: number; errors: number }> {
  const body = JSON.stringify({ amountMinor: "5000", currency: "USD", cardToken: "tok_visa", capture: true });
  const run = `saga-${Date.now()}`;
  const report = await runClosedLoop({
    concurrency: o.clients,
    durationMs: o.durationMs,
    warmupMs: o.warmupMs,
    requestTimeoutMs: 10_000,
    task: async ({ index, signal }) => {
      const res = await fetch(`${payments.url}/v1/payments`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${payments.apiKey}`,
          "content-type": "application/json",
          "idempotency-key": `${run}-${index}`,
        },
        body,
        signal,
      });
      const text = await res.text();
      if (res.status !== 201 || !text.includes('"captured"'))
        throw new Error(`POST /v1/payments answered ${res.status}`);
    },
  });
  return { perS: report.achievedRatePerS, p99Ms: report.latencyMs.p99, errors: report.errors };
}
