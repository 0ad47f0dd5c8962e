/**
 * FS-06/07: the three PostgreSQL strategies and the Redis script behind one port, under the
 * same parallel load on each engine pair. All four sell exactly the stock; only the
 * optimistic one pays in conflicts (its read and write are two statements, so callers
 * interleave between them on both engines). Their cost under load is the bench's table.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { StockCounter } from "../src/domain/stock-counter.ts";
import {
  ConditionalCounter,
  OptimisticCounter,
  PessimisticCounter,
  readStockRow,
  ScriptCounter,
} from "../src/store/pg-stock-strategies.ts";
import { embeddedFlash, type Flash, realFlash } from "./flash-backends.ts";

const STOCK = 40;
const ATTEMPTS = 240;

/** The optimistic run is smaller: each won round makes every other attempt go round again. */
const OPTIMISTIC_STOCK = 12;
const OPTIMISTIC_ATTEMPTS = 60;

async function race(counter: StockCounter, saleId: string, attempts = ATTEMPTS) {
  const results = await Promise.all(Array.from({ length: attempts }, () => counter.take(saleId, 1)));
  return {
    taken: results.filter((r) => r.taken).length,
    retries: results.reduce((sum, r) => sum + r.retries, 0),
    gaveUp: results.filter((r) => r.gaveUp).length,
  };
}

contractSuite<Flash>("FS-06 strategies", [embeddedFlash, realFlash], (it) => {
  it("FS-06 pessimistic SELECT … FOR UPDATE sells exactly the stock under 240 parallel attempts, with no retry", async (f) => {
    const sale = await f.sale(STOCK);
    const r = await race(new PessimisticCounter(f.db), sale.id);
    assert.deepEqual([r.taken, r.retries], [STOCK, 0]);
    assert.equal(await readStockRow(f.db, sale.id), 0);
  });

  it("FS-06 optimistic version check sells exactly the stock, and concurrent attempts conflict and retry (the herd)", async (f) => {
    const sale = await f.sale(OPTIMISTIC_STOCK);
    const r = await race(new OptimisticCounter(f.db, { maxRetries: 10_000 }), sale.id, OPTIMISTIC_ATTEMPTS);
    assert.deepEqual([r.taken, r.gaveUp], [OPTIMISTIC_STOCK, 0]);
    assert.equal(await readStockRow(f.db, sale.id), 0);
    // Its read and its write are two statements, so even PGlite interleaves them between callers.
    assert.ok(r.retries >= OPTIMISTIC_STOCK, `retries ${r.retries}: most attempts lose a round`);
  });

  it("FS-07 the conditional UPDATE … WHERE available >= n (the durable atomic decrement) sells exactly the stock, with no retry", async (f) => {
    const sale = await f.sale(STOCK);
    const r = await race(new ConditionalCounter(f.db), sale.id);
    assert.deepEqual([r.taken, r.retries], [STOCK, 0]);
    assert.equal(await readStockRow(f.db, sale.id), 0);
  });

  it("FS-06 the Redis script behind the same port sells exactly the stock, with no retry", async (f) => {
    const sale = await f.sale(STOCK);
    const r = await race(new ScriptCounter(f.stock, { holdTtlMs: 600_000 }), sale.id);
    assert.deepEqual([r.taken, r.retries], [STOCK, 0]);
    assert.equal((await f.stock.view(sale.id)).available, 0);
  });
});
