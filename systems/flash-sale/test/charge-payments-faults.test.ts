/**
 * The charge queue's faults against the payments service itself (FS-15, FS-18) — not the
 * stand-in: payments as its own process on this PostgreSQL in a schema of its own, its
 * acquirer simulator its own process (bench/payments-deployment.ts), flash-sale on PostgreSQL
 * and Redis.
 *
 * - payments SIGKILLed mid-drain, buyers still paying while it is down, then started again on
 *   the same port: the queue grows and nothing leaves it while payments is down, every charge
 *   is done once it returns (a payment it was making when killed is finished by payments'
 *   own recovery, asked again under the same key), and the acquirer made one authorization
 *   and one capture per order — nothing charged twice;
 * - payments slow (the acquirer's latency above payments' 2 s inline drive, so payments
 *   answers 202): the buyer, through flash-sale's own API, is told "payment processing" the
 *   whole time — never an error, the hold never released — and once the acquirer is fast
 *   again each hold is paid, charged once.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { createChargeSale, queueCharges } from "../bench/charge-drain.ts";
import { AUTHORIZE, startPaymentsDeployment } from "../bench/payments-deployment.ts";
import { PaymentsCharger } from "../src/clients/payments-charger.ts";
import { main } from "../src/main.ts";
import { migrateFlashSale } from "../src/store/migrate.ts";
import { auditSale } from "../src/store/sale-repository.ts";
import { StockStore, stockKeys, stockScriptsDir } from "../src/store/stock-store.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";

const RATE_PER_S = 20;
const ADMIN = "flash-admin-token-for-tests-0123";

async function undone(db: Database, saleId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int4 AS n FROM charges WHERE sale_id = $1 AND step <> 'done'",
    [saleId],
  );
  return rows[0]!.n;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(performance.now() < deadline, `${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("FS-15 FS-18 the payments service SIGKILLed mid-drain and started again: the queue grows while it is down, nothing lost, nothing charged twice after it returns", async (t) => {
  const pgUrl = await requirePostgres(t);
  const redisUrl = pgUrl && (await requireRedis(t));
  if (!pgUrl || !redisUrl) return;
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const undo of cleanups.reverse()) await undo();
  });
  const { db, drop } = await openPostgresTestSchema(pgUrl, {
    system: "flash-sale",
    prefix: "flash_pay_kill",
    prepare: migrateFlashSale,
    maxConnections: 6,
  });
  const redis = await connectRedis({ url: redisUrl, keyPrefix: `${uniqueName("flash_pay_kill")}:` });
  const saleId = "kill";
  cleanups.push(async () => {
    const k = stockKeys(saleId);
    await redis.del(k.stock, k.holds, k.quantities);
    await closeRedis(redis);
    await drop();
  });
  const stock = new StockStore(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(stockScriptsDir)));
  const payments = await startPaymentsDeployment({ pgUrl, acquirerLatencyMs: 5 });
  cleanups.push(() => payments.close());
  const charger = new PaymentsCharger({
    url: payments.url,
    apiKey: payments.apiKey,
    cardToken: "tok_visa",
    timeoutMs: 5_000,
  });
  const worker = new ChargeWorker({
    db,
    stock,
    charger,
    clock: systemClock,
    ratePerS: RATE_PER_S,
    maxBatch: RATE_PER_S,
    maxInFlight: 8,
    leaseMs: 30_000,
    idleMs: 50,
    retryBaseMs: 200,
    retryCapMs: 1_000,
  });
  cleanups.push(async () => {
    await worker.stop();
    charger.close();
  });
  const f = { db, stock };
  await createChargeSale(f, saleId, 80);
  await queueCharges(f, saleId, 40);
  worker.start();
  await until("a first charges paid", 60_000, async () => (await auditSale(db, saleId)).orders >= 10);
  await payments.kill();
  // Buyers keep paying while payments is down: their charges join the queue.
  await queueCharges(f, saleId, 40, 40);
  const ordersAtKill = (await auditSale(db, saleId)).orders;
  const queuedWhileDown = await undone(db, saleId);
  t.diagnostic(`killed with ${ordersAtKill} paid; ${queuedWhileDown} charges in the queue`);
  assert.ok(queuedWhileDown >= 40, "the queue grew: every charge paid during the outage is in it");
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal((await auditSale(db, saleId)).orders, ordersAtKill, "nothing is paid while payments is down");
  assert.equal(await undone(db, saleId), queuedWhileDown, "and nothing leaves the queue");

  await payments.restart();
  await until(
    "the queue drained after payments returned",
    120_000,
    async () => (await undone(db, saleId)) === 0,
  );
  const audit = await auditSale(db, saleId);
  assert.deepEqual([audit.orders, audit.soldTickets, audit.duplicateNumbers, audit.leaked], [80, 80, 0, 0]);
  const { rows } = await db.query<{ payment_id: string; outcome: string }>(
    "SELECT o.payment_id, c.outcome FROM orders o JOIN charges c ON c.hold_id = o.hold_id WHERE o.sale_id = $1",
    [saleId],
  );
  assert.equal(new Set(rows.map((r) => r.payment_id)).size, 80, "one payment per order");
  assert.ok(rows.every((r) => r.outcome === "paid"));
  for (const r of rows) assert.equal((await payments.payment(r.payment_id)).status, "captured");
  const stats = await payments.acquirerStats();
  t.diagnostic(`acquirer: ${JSON.stringify(stats)}`);
  assert.deepEqual(
    [stats.authorizations, stats.approved, stats.captures, stats.refunds],
    [80, 80, 80, 0],
    "one authorization and one capture per order: nothing charged twice",
  );
  const busiest = Math.max(...(await payments.arrivals()).map((s) => s.operations[AUTHORIZE] ?? 0));
  assert.ok(busiest <= RATE_PER_S, `at most the rate after the restart too: ${busiest}`);
});

test("FS-15 payments slow (the acquirer past payments' inline drive): the buyer sees 'payment processing', never an error; paid and charged once when it is fast again", async (t) => {
  const pgUrl = await requirePostgres(t);
  if (!pgUrl) return;
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const undo of cleanups.reverse()) await undo();
  });
  const payments = await startPaymentsDeployment({ pgUrl, acquirerLatencyMs: 5 });
  cleanups.push(() => payments.close());
  const dir = await mkdtemp(join(tmpdir(), "casebook-flash-slow-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  // Flash-sale as main() starts it (PGlite, in-process stock, the real clock) wired to payments.
  const running = await main({
    PORT: "0",
    CASEBOOK_DATA: dir,
    LOG_LEVEL: "silent",
    FLASH_SALE_ADMIN_TOKEN: ADMIN,
    PAYMENTS_URL: payments.url,
    PAYMENTS_API_KEY: payments.apiKey,
    FLASH_SALE_CHARGE_RATE_PER_S: String(RATE_PER_S),
    FLASH_SALE_CHARGE_TIMEOUT_MS: "5000",
  });
  cleanups.push(() => running.close());
  const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await running.service.app.inject({
      method: method as "GET",
      url,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: res.statusCode, json: res.json() };
  };
  const sale = await call(
    "POST",
    "/v1/admin/sales",
    { id: "slow", name: "slow", tickets: 3, priceMinor: 5_000, currency: "USD" },
    { authorization: `Bearer ${ADMIN}` },
  );
  assert.equal(sale.status, 201);
  const holds: string[] = [];
  for (const user of ["ana", "bia", "caio"]) {
    const joined = await call("POST", "/v1/sales/slow/entrants", { user });
    assert.equal(joined.status, 201);
    let token = "";
    await until(`${user} admitted`, 20_000, async () => {
      const a = await call("POST", `/v1/sales/slow/entrants/${user}/admission`, undefined, {
        "x-entrant-secret": joined.json.secret,
      });
      token = a.json.token ?? "";
      return a.json.state === "admitted";
    });
    const hold = await call(
      "POST",
      "/v1/sales/slow/holds",
      { quantity: 1 },
      { authorization: `Bearer ${token}`, "x-entrant-secret": joined.json.secret },
    );
    assert.equal(hold.status, 201, JSON.stringify(hold.json));
    holds.push(hold.json.id);
  }

  // The acquirer slows past payments' 2 s inline drive: payments answers 202 to each charge.
  await payments.setAcquirer({ latencyMs: 3_000 });
  for (const id of holds) {
    const paid = await call("POST", `/v1/holds/${id}/pay`);
    assert.equal(paid.status, 202);
    assert.match(paid.json.message, /payment processing/i);
  }
  const slowUntil = performance.now() + 6_000;
  while (performance.now() < slowUntil) {
    for (const id of holds) {
      const h = await call("GET", `/v1/holds/${id}`);
      assert.equal(h.status, 200);
      assert.equal(h.json.state, "charging", "while payments is slow the hold waits, frozen");
      assert.match(h.json.message, /payment processing/i);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  await payments.setAcquirer({ latencyMs: 5 });
  await until("every hold paid once the acquirer is fast again", 90_000, async () => {
    for (const id of holds) if ((await call("GET", `/v1/holds/${id}`)).json.state !== "paid") return false;
    return true;
  });
  for (const id of holds) {
    const h = await call("GET", `/v1/holds/${id}`);
    assert.equal((await payments.payment(h.json.order.paymentId)).status, "captured");
  }
  const stats = await payments.acquirerStats();
  assert.deepEqual(
    [stats.authorizations, stats.captures],
    [3, 3],
    "one authorization and one capture per hold, however often it was asked",
  );
});
