/**
 * The ledger port of `domain/checkout.ts` on PostgreSQL: binding a hold Redis admitted, and
 * FS-11's recompute, which writes the stock it computed back to the hot store before its
 * transaction commits (see `recomputeStock`).
 *
 * @example
 * const ledger = new HoldLedger({ db, stock, clock, recheckMs: 30_000 });
 * await ledger.recompute("s1"); // after Redis restarted empty
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { BindOutcome, LedgerPort } from "../domain/checkout.ts";
import { bindHold, type Recomputed, recomputeStock } from "./sale-repository.ts";
import type { StockStore } from "./stock-store.ts";

export interface HoldLedgerOptions {
  db: Database;
  stock: StockStore;
  clock: Clock;
  /** When carried (charging) holds are looked at next by the reconciler. */
  recheckMs: number;
  onRecomputed?: (saleId: string, recomputed: Recomputed) => void;
}

export class HoldLedger implements LedgerPort {
  readonly #o: HoldLedgerOptions;

  constructor(options: HoldLedgerOptions) {
    this.#o = options;
  }

  bind(input: Parameters<LedgerPort["bind"]>[0]): Promise<BindOutcome> {
    return bindHold(this.#o.db, input);
  }

  async recompute(saleId: string): Promise<Recomputed | undefined> {
    const { db, stock, clock, recheckMs } = this.#o;
    const recomputed = await recomputeStock(db, saleId, clock.nowMs(), (r) =>
      stock.restore(saleId, { epoch: r.epoch, available: r.available, carried: r.carried, recheckMs }),
    );
    if (recomputed !== undefined) this.#o.onRecomputed?.(saleId, recomputed);
    return recomputed;
  }
}
