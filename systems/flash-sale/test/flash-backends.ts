/**
 * The whole inventory on each pair of engines a deployment runs: PGlite in memory with the
 * in-process stock on one ManualClock (the default `npm start`), and PostgreSQL (a fresh
 * schema) with the real Redis (a key prefix of its own) on the system clock. Each backend
 * gives the checkout, the ledger, the reconciler and the raw stores, so one suite runs on both.
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { InProcessScriptRunner, RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import type { Database } from "@casebook/infra/sql/sql";
import { type Clock, ManualClock, systemClock } from "@casebook/kit/clock";
import type { Backend } from "@casebook/lab/contract-suite";
import { openPgliteTestDatabase, openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Checkout } from "../src/domain/checkout.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { migrateFlashSale } from "../src/store/migrate.ts";
import { createSale, type Sale } from "../src/store/sale-repository.ts";
import { stockTwins } from "../src/store/script-twins.ts";
import { StockStore, stockKeys, stockScriptsDir } from "../src/store/stock-store.ts";
import { HoldReconciler } from "../src/workers/hold-reconciler.ts";

export const RECHECK_MS = 30_000;

export interface Flash {
  readonly engine: "embedded" | "real";
  readonly db: Database;
  readonly stock: StockStore;
  readonly ledger: HoldLedger;
  readonly checkout: Checkout;
  readonly reconciler: HoldReconciler;
  readonly clock: Clock;
  /** Makes a sale of `tickets` with its stock in the hot store. */
  sale(tickets: number, options?: { perBuyerMax?: number; holdTtlMs?: number }): Promise<Sale>;
  /** Lets both clocks pass `ms` (the ManualClock; real time and Redis TIME on the real engines). */
  passMs(ms: number): Promise<void>;
  /** Drops a sale's keys, as a Redis restarted empty would. */
  forgetStock(saleId: string): Promise<void>;
  /** Where the real engines are, for a child process that joins them (real backend only). */
  readonly engines?: { pgUrl: string; schema: string; redisUrl: string; keyPrefix: string };
}

let holdSeq = 0;
const newHoldId = () => `h_${process.pid}_${Date.now().toString(36)}_${(holdSeq++).toString(36)}`;

function assemble(
  engine: Flash["engine"],
  db: Database,
  stock: StockStore,
  clock: Clock,
  passMs: (ms: number) => Promise<void>,
  forgetStock: (saleId: string) => Promise<void>,
  sales: Set<string>,
): Flash {
  const ledger = new HoldLedger({ db, stock, clock, recheckMs: RECHECK_MS });
  const reconciler = new HoldReconciler({
    db,
    stock,
    ledger,
    clock,
    sales: async () => [...sales],
    maxBatch: 1_000,
    idleMs: 50,
    recheckMs: RECHECK_MS,
  });
  let saleSeq = 0;
  return {
    engine,
    db,
    stock,
    ledger,
    reconciler,
    clock,
    checkout: new Checkout({ stock, ledger, newHoldId, clock }),
    passMs,
    forgetStock,
    sale: async (tickets, options = {}) => {
      const id = uniqueName(`sale${saleSeq++}`);
      const sale = await createSale(
        db,
        {
          id,
          name: id,
          tickets,
          perBuyerMax: options.perBuyerMax ?? 4,
          holdTtlMs: options.holdTtlMs ?? 600_000,
          priceMinor: 5_000n,
          currency: "USD",
          opensAtMs: clock.nowMs(),
        },
        clock.nowMs(),
      );
      if (sale === undefined) throw new Error("sale id taken");
      sales.add(id);
      await stock.restore(id, {
        epoch: sale.stockEpoch,
        available: tickets,
        carried: [],
        recheckMs: RECHECK_MS,
      });
      return sale;
    },
  };
}

export const embeddedFlash: Backend<Flash> = {
  name: "pglite + in-process stock",
  embedded: true,
  open: async () => {
    const db = await openPgliteTestDatabase({ system: "flash-sale", prepare: migrateFlashSale });
    const clock = new ManualClock(1_800_000_000_000);
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 100_000 });
    const registry = await ScriptRegistry.fromDir(stockScriptsDir);
    const stock = new StockStore(new InProcessScriptRunner({ registry, twins: stockTwins, keyspace }));
    const forget = async (saleId: string) => {
      const k = stockKeys(saleId);
      keyspace.del(k.stock, k.holds, k.quantities);
    };
    const subject = assemble(
      "embedded",
      db,
      stock,
      clock,
      async (ms) => clock.advance(ms),
      forget,
      new Set(),
    );
    return { subject, close: () => db.close() };
  },
};

export const realFlash: Backend<Flash> = {
  name: "postgresql + redis",
  open: async (t) => {
    const pgUrl = await requirePostgres(t);
    const redisUrl = pgUrl && (await requireRedis(t));
    if (!pgUrl || !redisUrl) return undefined;
    const { db, schema, drop } = await openPostgresTestSchema(pgUrl, {
      system: "flash-sale",
      prefix: "flash",
      prepare: migrateFlashSale,
      maxConnections: 8,
    });
    const keyPrefix = `${uniqueName("flash")}:`;
    const redis = await connectRedis({ url: redisUrl, keyPrefix, commandTimeoutMs: 5_000 });
    const registry = await ScriptRegistry.fromDir(stockScriptsDir);
    const stock = new StockStore(new RedisScriptRunner(redis, registry));
    const sales = new Set<string>();
    const forget = async (saleId: string) => {
      const k = stockKeys(saleId);
      await redis.del(k.stock, k.holds, k.quantities);
    };
    const passMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms + 5));
    const subject = {
      ...assemble("real", db, stock, systemClock, passMs, forget, sales),
      engines: { pgUrl, schema, redisUrl, keyPrefix },
    };
    const close = async () => {
      for (const id of sales) await forget(id);
      await closeRedis(redis);
      await drop();
    };
    return { subject, close };
  },
};

/**
 * Someone else's paid order already holds `number` of the sale (a message processed twice, a
 * lying Redis): the next order write naming it is refused (FS-10) — how a test reaches FS-18's
 * compensation after an approved charge.
 */
export async function occupyNumber(db: Database, saleId: string, number: number): Promise<void> {
  await db.query(
    `INSERT INTO holds (id, sale_id, buyer, quantity, numbers, state, epoch, expires_at, created_at, updated_at)
     VALUES ('ghost', $1, 'ghost', 1, ARRAY[$2::int4], 'paid', 1, now(), now(), now())`,
    [saleId, number],
  );
  await db.query(
    "INSERT INTO orders (hold_id, sale_id, buyer, payment_id, amount_minor, created_at) VALUES ('ghost', $1, 'ghost', 'p', 1, now())",
    [saleId],
  );
  await db.query("INSERT INTO order_tickets (sale_id, number, hold_id) VALUES ($1, $2, 'ghost')", [
    saleId,
    number,
  ]);
}
