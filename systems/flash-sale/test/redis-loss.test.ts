/**
 * FS-11 as a fault: a private redis-server (lab's spawnRedis, never the shared one) is
 * SIGKILLed mid-sale and restarted empty, under PostgreSQL. While it is down a reservation
 * fails (REDIS_UNAVAILABLE: nothing sold); once it is back, the first reservation recomputes
 * the stock from the truth — paid and charging holds stay counted, held ones are lost (their
 * buyers ask again) — and a race for the rest sells exactly what is left, nothing twice.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { systemClock } from "@casebook/kit/clock";
import { spawnRedis } from "@casebook/lab/spawn-redis";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { Checkout } from "../src/domain/checkout.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { migrateFlashSale } from "../src/store/migrate.ts";
import { auditSale, completeOrder, createSale, getHold, startCharge } from "../src/store/sale-repository.ts";
import { StockStore, stockScriptsDir } from "../src/store/stock-store.ts";

const TICKETS = 200;

test("FS-11 Redis SIGKILLed mid-sale and restarted empty: the stock is recomputed exactly, nothing is oversold", async (t) => {
  const pgUrl = await requirePostgres(t);
  if (!pgUrl) return;
  const { db, drop } = await openPostgresTestSchema(pgUrl, {
    system: "flash-sale",
    prefix: "flash_loss",
    prepare: migrateFlashSale,
    maxConnections: 8,
  });
  t.after(drop);
  const engine = await spawnRedis();
  t.after(() => engine.stop());
  const redis = await connectRedis({ url: engine.url, commandTimeoutMs: 2_000, reconnectMaxDelayMs: 100 });
  t.after(() => closeRedis(redis));
  const stock = new StockStore(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(stockScriptsDir)));
  const ledger = new HoldLedger({ db, stock, clock: systemClock, recheckMs: 30_000 });
  let seq = 0;
  const checkout = new Checkout({ stock, ledger, clock: systemClock, newHoldId: () => `h${seq++}` });
  const sale = await createSale(
    db,
    {
      id: "loss",
      name: "loss",
      tickets: TICKETS,
      perBuyerMax: 2,
      holdTtlMs: 600_000,
      priceMinor: 100n,
      currency: "USD",
      opensAtMs: 0,
    },
    systemClock.nowMs(),
  );
  assert.ok(sale);
  await stock.restore(sale.id, { epoch: 1, available: TICKETS, carried: [], recheckMs: 30_000 });
  const reserve = (buyer: string, quantity = 1) =>
    checkout.reserve({ saleId: sale.id, buyer, quantity, holdTtlMs: 600_000 });

  // Before the crash: 60 holds of 2 tickets — 20 paid, 20 charging, 20 left held.
  const holds: string[] = [];
  for (let i = 0; i < 60; i++) {
    const r = await reserve(`before-${i}`, 2);
    assert.equal(r.kind, "held");
    holds.push((r as { holdId: string }).holdId);
  }
  for (const holdId of holds.slice(0, 40))
    assert.equal((await startCharge(db, { holdId, nowMs: systemClock.nowMs() })).won, true);
  for (const holdId of holds.slice(0, 20)) {
    await completeOrder(db, {
      holdId,
      paymentId: `p-${holdId}`,
      amountMinor: 200n,
      nowMs: systemClock.nowMs(),
    });
    await stock.settleHold(sale.id, holdId);
  }
  assert.equal((await stock.view(sale.id)).available, TICKETS - 120);

  await engine.kill();
  await assert.rejects(
    reserve("during"),
    (e) => redisErrors.is(e) && /REDIS_(UNAVAILABLE|TIMEOUT)/.test(e.code),
  );
  assert.equal((await auditSale(db, sale.id)).bound, 120, "nothing changed while Redis was down");

  await engine.restart(); // same port, empty: no persistence
  for (let i = 0; ; i++) {
    try {
      await redis.ping();
      break;
    } catch (error) {
      if (i > 100) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const first = await reserve("after-first");
  assert.equal(first.kind, "held");
  // 200 − 40 paid − 40 charging − this one; the 40 tickets of the 20 held holds came back.
  assert.equal((first as { availableAfter: number }).availableAfter, TICKETS - 81);
  assert.deepEqual(
    [(await getHold(db, holds[50]!))?.state, (await getHold(db, holds[50]!))?.releaseReason],
    ["released", "lost"],
  );

  const rest = await Promise.all(Array.from({ length: 300 }, (_, i) => reserve(`after-${i}`)));
  assert.equal(rest.filter((r) => r.kind === "held").length, TICKETS - 81);
  const audit = await auditSale(db, sale.id);
  assert.deepEqual(
    [audit.bound, audit.leaked, audit.duplicateNumbers],
    [TICKETS, 0, 0],
    "every ticket bound once, none more",
  );
  // The sorted set: the 20 charging holds carried over, and the 120 new holds of one ticket.
  assert.deepEqual(await stock.view(sale.id), { available: 0, epoch: 2, holds: 20 + (TICKETS - 80) });
});
