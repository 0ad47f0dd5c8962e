/**
 * FS-01/05 as the text states it, on the real Redis and PostgreSQL: 4 OS processes make
 * 100,000 attempts between them for 5,000 tickets, in the same instant. Each runs the
 * production checkout (Redis script, then the PostgreSQL hold); 9 winners in 10 pay at once,
 * the 10th lets the hold expire. Then the reconciler returns the expired holds and a second
 * wave buys them. The end: exactly 5,000 orders, 5,000 numbers each sold once, the counter at
 * 0 and never below, and no hold leaked after expiry.
 *
 * The charge here is the order write itself; the charge queue through payments' API is
 * proved in its own tests (FS-15/18).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { systemClock } from "@casebook/kit/clock";
import { spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Checkout } from "../src/domain/checkout.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { migrateFlashSale } from "../src/store/migrate.ts";
import { auditSale, completeOrder, createSale, transitionHold } from "../src/store/sale-repository.ts";
import { StockStore, stockKeys, stockScriptsDir } from "../src/store/stock-store.ts";
import { HoldReconciler } from "../src/workers/hold-reconciler.ts";

const PROCESSES = 4;
const ATTEMPTS = 100_000;
const TICKETS = 5_000;
const CONCURRENCY_PER_PROCESS = 64;
const HOLD_TTL_MS = 3_000;
const childFile = new URL("./sale-race-child.ts", import.meta.url);

interface Tally {
  attempts: number;
  held: number;
  soldOut: number;
  other: number;
  paid: number;
  leftToExpire: number;
  lastOne: number;
}

test("FS-01 FS-05 4 processes, 100,000 attempts for 5,000 tickets on Redis + PostgreSQL: exactly 5,000 sold, none twice, no hold leaked", async (t) => {
  const pgUrl = await requirePostgres(t);
  const redisUrl = pgUrl && (await requireRedis(t));
  if (!pgUrl || !redisUrl) return;
  const { db, schema, drop } = await openPostgresTestSchema(pgUrl, {
    system: "flash-sale",
    prefix: "flash_race",
    prepare: migrateFlashSale,
    maxConnections: 8,
  });
  const keyPrefix = `${uniqueName("flash_race")}:`;
  const redis = await connectRedis({ url: redisUrl, keyPrefix, commandTimeoutMs: 20_000 });
  const saleId = "race";
  t.after(async () => {
    const k = stockKeys(saleId);
    await redis.del(k.stock, k.holds, k.quantities);
    await closeRedis(redis);
    await drop();
  });
  const stock = new StockStore(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(stockScriptsDir)));
  const sale = await createSale(
    db,
    {
      id: saleId,
      name: "race",
      tickets: TICKETS,
      perBuyerMax: 1,
      holdTtlMs: HOLD_TTL_MS,
      priceMinor: 5_000n,
      currency: "USD",
      opensAtMs: 0,
    },
    systemClock.nowMs(),
  );
  assert.ok(sale);
  await stock.restore(saleId, { epoch: sale.stockEpoch, available: TICKETS, carried: [], recheckMs: 30_000 });

  const startedAt = performance.now();
  const phase = (name: string) => t.diagnostic(`${name}: ${Math.round(performance.now() - startedAt)} ms`);
  const perProcess = ATTEMPTS / PROCESSES;
  const children = await Promise.all(
    Array.from({ length: PROCESSES }, (_, p) =>
      spawnChild(childFile, {
        args: [
          pgUrl,
          schema,
          redisUrl,
          keyPrefix,
          saleId,
          String(p * perProcess),
          String(perProcess),
          String(CONCURRENCY_PER_PROCESS),
          String(HOLD_TTL_MS),
        ],
        ready: "ready",
        readyTimeoutMs: 60_000,
        // A hang guard, not a speed claim: the run takes ~60 s at load 25 on 2 cores.
        lineTimeoutMs: 240_000,
        test: t,
      }),
    ),
  );
  phase("processes ready");
  for (const child of children) child.send("go");
  const tallies = (await Promise.all(children.map((c) => c.nextLine()))).map(
    (line) => JSON.parse(line) as Tally,
  );
  phase("100,000 attempts done");
  const sum = (k: keyof Tally) => tallies.reduce((s, x) => s + x[k], 0);
  assert.equal(sum("attempts"), ATTEMPTS);
  assert.equal(sum("held"), TICKETS, "exactly 5,000 attempts got a hold");
  assert.equal(sum("soldOut"), ATTEMPTS - TICKETS, "the other 95,000 were told sold out");
  assert.equal(sum("other"), 0);
  assert.equal(sum("lastOne"), 1, "one attempt saw 0: it got the last ticket");
  assert.equal((await stock.view(saleId)).available, 0, "the counter ends at 0, never below");

  // The unpaid holds expire; the reconciler gives their tickets back; nothing leaks.
  const ledger = new HoldLedger({ db, stock, clock: systemClock, recheckMs: 30_000 });
  const reconciler = new HoldReconciler({
    db,
    stock,
    ledger,
    clock: systemClock,
    sales: async () => [saleId],
    maxBatch: 1_000,
    idleMs: 50,
    recheckMs: 30_000,
  });
  const unpaid = TICKETS - sum("paid");
  assert.ok(unpaid >= sum("leftToExpire"));
  await new Promise((r) => setTimeout(r, HOLD_TTL_MS + 100));
  let returned = 0;
  for (let round = 0; round < 20 && returned < unpaid; round++)
    returned += (await reconciler.runOnce()).returned;
  assert.equal(returned, unpaid, "every expired hold came back");
  phase("expired holds returned");
  const afterExpiry = await auditSale(db, saleId);
  assert.deepEqual(
    [afterExpiry.holdsByState.held, afterExpiry.leaked, afterExpiry.bound],
    [0, 0, sum("paid")],
  );
  assert.equal((await stock.view(saleId)).available, unpaid);

  // A second wave buys what came back, and not one more.
  let seq = 0;
  const checkout = new Checkout({ stock, ledger, clock: systemClock, newHoldId: () => `w2_${seq++}` });
  let secondWave = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; ; i++) {
        const r = await checkout.reserve({ saleId, buyer: `w2_${w}_${i}`, quantity: 1, holdTtlMs: 600_000 });
        if (r.kind !== "held") return;
        assert.equal((await transitionHold(db, r.holdId, "pay", systemClock.nowMs())).won, true);
        const done = await completeOrder(db, {
          holdId: r.holdId,
          paymentId: `p_${r.holdId}`,
          amountMinor: 5_000n,
          nowMs: systemClock.nowMs(),
        });
        assert.equal(done.kind, "paid");
        await stock.settleHold(saleId, r.holdId);
        secondWave += 1;
      }
    }),
  );
  assert.equal(secondWave, unpaid);
  phase("second wave sold out");
  const audit = await auditSale(db, saleId);
  assert.equal(audit.orders, TICKETS, "exactly 5,000 orders");
  assert.equal(audit.soldTickets, TICKETS);
  assert.equal(audit.duplicateNumbers, 0, "0 ticket numbers twice");
  assert.equal(audit.leaked, 0, "0 holds leaked");
  assert.deepEqual(await stock.view(saleId), { available: 0, epoch: 1, holds: 0 });
});
