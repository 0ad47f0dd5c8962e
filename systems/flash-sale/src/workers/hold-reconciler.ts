/**
 * FS-08/09: the periodic reconciler that gives expired holds' tickets back — never Redis
 * keyspace notifications, which are pub/sub without delivery guarantees (correction 9). Each
 * round, per sale: if Redis lost the stock, recompute it (FS-11); then take the holds due by
 * the sorted set (no scan), and for each let PostgreSQL decide:
 *
 * | hold in PostgreSQL            | in Redis                                   |
 * |-------------------------------|--------------------------------------------|
 * | held, due → released (won)    | return-hold: its tickets back, once        |
 * | released already, or no row   | return-hold (a crash between the steps)    |
 * | paid                          | settle-hold: out of the set, stays sold    |
 * | charging (frozen)             | defer-hold by recheckMs: its charge decides |
 * | held, not due by our clock    | defer-hold until its deadline              |
 *
 * Every Redis step is idempotent, so a round killed half way is finished by the next.
 * Runs on kit's BackgroundLoop: rounds never overlap, failures back off.
 *
 * @example
 * const reconciler = new HoldReconciler({ db, stock, ledger, clock, sales, maxBatch: 500, idleMs: 1_000, recheckMs: 30_000 });
 * reconciler.start(); … await reconciler.stop();
 */
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { HoldLedger } from "../store/hold-ledger.ts";
import { transitionHold } from "../store/sale-repository.ts";
import type { StockStore } from "../store/stock-store.ts";

export interface HoldReconcilerOptions {
  db: Database;
  stock: StockStore;
  ledger: HoldLedger;
  clock: Clock;
  /** The sales to look at each round. */
  sales: () => Promise<readonly string[]>;
  /** Due holds handled per sale per round (1..10,000). */
  maxBatch: number;
  /** Pause between rounds that found nothing more to do. */
  idleMs: number;
  /** How far a frozen (charging) hold's next look is pushed. */
  recheckMs: number;
  onError?: (error: unknown, failures: number) => void;
}

export interface ReconcileRound {
  returned: number;
  settled: number;
  deferred: number;
  recomputed: number;
  /** Some sale had a full batch due: run again at once. */
  more: boolean;
}

export class HoldReconciler {
  readonly #o: HoldReconcilerOptions;
  readonly #loop: BackgroundLoop;

  constructor(options: HoldReconcilerOptions) {
    this.#o = options;
    this.#loop = new BackgroundLoop({
      name: "hold reconciler",
      round: async () => (await this.runOnce()).more,
      idleMs: options.idleMs,
      failureBackoff: { capMs: Math.max(options.idleMs, 10_000), jitter: "equal", random: systemRandom },
      onError: options.onError ?? (() => {}),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async runOnce(): Promise<ReconcileRound> {
    const round: ReconcileRound = { returned: 0, settled: 0, deferred: 0, recomputed: 0, more: false };
    for (const saleId of await this.#o.sales()) await this.#sale(saleId, round);
    return round;
  }

  async #sale(saleId: string, round: ReconcileRound): Promise<void> {
    const { db, stock, ledger, clock } = this.#o;
    if ((await stock.view(saleId)).available === -1) {
      if ((await ledger.recompute(saleId)) !== undefined) round.recomputed += 1;
      return;
    }
    const due = await stock.dueHolds(saleId, this.#o.maxBatch);
    if (due.holdIds.length === this.#o.maxBatch) round.more = true;
    for (const holdId of due.holdIds) await this.#hold(db, saleId, holdId, clock.nowMs(), round);
  }

  async #hold(
    db: Database,
    saleId: string,
    holdId: string,
    nowMs: number,
    round: ReconcileRound,
  ): Promise<void> {
    const { stock } = this.#o;
    const outcome = await transitionHold(db, holdId, "expire", nowMs);
    const hold = outcome.hold;
    if (outcome.won || hold === undefined || hold.state === "released") {
      if ((await stock.returnHold(saleId, holdId)).returned) round.returned += 1;
    } else if (hold.state === "paid") {
      if (await stock.settleHold(saleId, holdId)) round.settled += 1;
    } else {
      const delayMs = hold.state === "charging" ? this.#o.recheckMs : Math.max(1, hold.expiresAtMs - nowMs);
      if (await stock.deferHold(saleId, holdId, delayMs)) round.deferred += 1;
    }
  }
}
