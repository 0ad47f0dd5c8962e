/**
 * FS-06's three PostgreSQL strategies on the `stock_rows` row of a sale, behind the domain's
 * `StockCounter`; the fourth, the Redis script, wraps the stock store. None of them is the
 * reservation path (that is `domain/checkout.ts`); they exist to be compared under one load.
 *
 * - pessimistic: `SELECT … FOR UPDATE`, check, `UPDATE`: correct, every attempt queues on the
 *   row lock for the whole transaction.
 * - optimistic: read (available, version), `UPDATE … WHERE version = $v`, retry on 0 rows:
 *   nothing blocks, and nearly every concurrent attempt loses and goes round again (a herd).
 * - conditional: one `UPDATE … SET available = available − n WHERE available >= n RETURNING`:
 *   the row lock is held for one statement; FS-07's durable atomic decrement.
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { StockCounter, TakeResult } from "../domain/stock-counter.ts";
import type { StockStore } from "./stock-store.ts";

const taken = (availableAfter: number | undefined, retries = 0): TakeResult => ({
  taken: true,
  availableAfter,
  retries,
  gaveUp: false,
});
const refused = (availableAfter: number | undefined, retries = 0, gaveUp = false): TakeResult => ({
  taken: false,
  availableAfter,
  retries,
  gaveUp,
});

export class PessimisticCounter implements StockCounter {
  readonly strategy = "pessimistic";
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  take(saleId: string, quantity: number): Promise<TakeResult> {
    return this.#db.transaction(async (tx) => {
      const { rows } = await tx.query<{ available: bigint }>(
        "SELECT available FROM stock_rows WHERE sale_id = $1 FOR UPDATE",
        [saleId],
      );
      const available = Number(rows[0]?.available ?? 0);
      if (available < quantity) return refused(available);
      await tx.query("UPDATE stock_rows SET available = available - $2 WHERE sale_id = $1", [
        saleId,
        quantity,
      ]);
      return taken(available - quantity);
    });
  }
}

export class OptimisticCounter implements StockCounter {
  readonly strategy = "optimistic";
  readonly #db: Database;
  readonly #maxRetries: number;

  /** `maxRetries` bounds one attempt's conflicts; past it the attempt gives up (refused). */
  constructor(db: Database, options: { maxRetries: number }) {
    this.#db = db;
    this.#maxRetries = options.maxRetries;
  }

  async take(saleId: string, quantity: number): Promise<TakeResult> {
    for (let retries = 0; retries <= this.#maxRetries; retries++) {
      const { rows } = await this.#db.query<{ available: bigint; version: bigint }>(
        "SELECT available, version FROM stock_rows WHERE sale_id = $1",
        [saleId],
      );
      const available = Number(rows[0]?.available ?? 0);
      if (available < quantity) return refused(available, retries);
      const write = await this.#db.query(
        "UPDATE stock_rows SET available = available - $2, version = version + 1 WHERE sale_id = $1 AND version = $3",
        [saleId, quantity, rows[0]!.version],
      );
      if (write.rowCount === 1) return taken(available - quantity, retries);
    }
    return refused(undefined, this.#maxRetries, true);
  }
}

export class ConditionalCounter implements StockCounter {
  readonly strategy = "conditional";
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async take(saleId: string, quantity: number): Promise<TakeResult> {
    const { rows } = await this.#db.query<{ available: bigint }>(
      "UPDATE stock_rows SET available = available - $2 WHERE sale_id = $1 AND available >= $2 RETURNING available",
      [saleId, quantity],
    );
    return rows[0] === undefined ? refused(undefined) : taken(Number(rows[0].available));
  }
}

/** The Redis script behind the same port: each take is a hold of `holdTtlMs` (FS-05). */
export class ScriptCounter implements StockCounter {
  readonly strategy = "redis-script";
  readonly #stock: StockStore;
  readonly #holdTtlMs: number;
  #next = 0;

  constructor(stock: StockStore, options: { holdTtlMs: number }) {
    this.#stock = stock;
    this.#holdTtlMs = options.holdTtlMs;
  }

  async take(saleId: string, quantity: number): Promise<TakeResult> {
    const holdId = `c_${process.pid}_${this.#next++}`;
    const r = await this.#stock.reserve(saleId, { holdId, quantity, holdTtlMs: this.#holdTtlMs });
    if (r.kind === "reserved") return taken(r.availableAfter);
    return refused(r.kind === "refused" ? r.availableAfter : undefined);
  }
}

/** FS-06's row, set to `available` (the bench and the tests start every strategy equal). */
export async function resetStockRow(db: Database, saleId: string, available: number): Promise<void> {
  await db.query(
    `INSERT INTO stock_rows (sale_id, available) VALUES ($1, $2)
     ON CONFLICT (sale_id) DO UPDATE SET available = EXCLUDED.available, version = 0`,
    [saleId, available],
  );
}

export async function readStockRow(db: Database, saleId: string): Promise<number | undefined> {
  const { rows } = await db.query<{ available: bigint }>(
    "SELECT available FROM stock_rows WHERE sale_id = $1",
    [saleId],
  );
  return rows[0] && Number(rows[0].available);
}
