/**
 * The reservation (FS-08) as one protocol over two ports: the hot stock (Redis's reserve
 * script) decides who gets a ticket, the ledger (PostgreSQL) records the hold and binds its
 * ticket numbers. The stock is asked first so that 100,000 attempts cost 100,000 script calls
 * and only the winners — about N — cost a transaction (FS-01: the problem is inventory).
 *
 * Every way the second step can fail gives the stock back through `returnHold`, which is
 * idempotent (the hold's sorted-set membership gates it), so a crash between the steps leaks
 * nothing for longer than the hold's TTL: the reconciler finds the hold due, sees no row, and
 * returns it. When Redis has lost the sale's stock (FS-11) the ledger recomputes it and the
 * attempt is made again, a bounded number of times.
 *
 * @example
 * const checkout = new Checkout({ stock, ledger, newHoldId, clock });
 * const r = await checkout.reserve({ saleId: "s1", buyer: "u1", quantity: 1, holdTtlMs: 600_000 });
 * if (r.kind === "held") r.numbers; // [42]
 */
import type { Clock } from "@casebook/kit/clock";

export type ReserveReply =
  | { kind: "reserved"; availableAfter: number; epoch: number; expiresAtMs: number }
  /** Sold out for this quantity: the script undid its subtraction; availableAfter < 0. */
  | { kind: "refused"; availableAfter: number }
  /** Redis holds no stock for the sale: it lost it, or the sale was never written there. */
  | { kind: "missing" };

export interface StockPort {
  reserve(
    saleId: string,
    hold: { holdId: string; quantity: number; holdTtlMs: number },
  ): Promise<ReserveReply>;
  returnHold(saleId: string, holdId: string): Promise<unknown>;
}

export type BindOutcome =
  | { kind: "bound"; numbers: number[] }
  | { kind: "stale-epoch" }
  | { kind: "no-ticket" }
  | { kind: "buyer-has-hold" }
  | { kind: "over-cap"; owned: number }
  | { kind: "unknown-sale" };

export interface LedgerPort {
  bind(input: {
    holdId: string;
    saleId: string;
    buyer: string;
    quantity: number;
    epoch: number;
    expiresAtMs: number;
    nowMs: number;
  }): Promise<BindOutcome>;
  /** FS-11: recompute the sale's stock from the truth and write it to the hot store. */
  recompute(saleId: string): Promise<unknown>;
}

export type ReserveResult =
  | { kind: "held"; holdId: string; numbers: number[]; expiresAtMs: number; availableAfter: number }
  | { kind: "sold-out" }
  | { kind: "buyer-has-hold" }
  | { kind: "over-cap"; owned: number }
  | { kind: "unknown-sale" };

/** Attempts after a missing stock or a stale epoch: a recompute settles either in one. */
export const MAX_RESERVE_ATTEMPTS = 3;

export interface CheckoutOptions {
  stock: StockPort;
  ledger: LedgerPort;
  newHoldId: () => string;
  clock: Clock;
}

export class Checkout {
  readonly #o: CheckoutOptions;

  constructor(options: CheckoutOptions) {
    this.#o = options;
  }

  async reserve(input: {
    saleId: string;
    buyer: string;
    quantity: number;
    holdTtlMs: number;
  }): Promise<ReserveResult> {
    for (let attempt = 1; attempt <= MAX_RESERVE_ATTEMPTS; attempt++) {
      const result = await this.#attempt(input);
      if (result !== "again") return result;
    }
    // Redis keeps losing the stock faster than it can be recomputed: refuse, sell nothing.
    return { kind: "sold-out" };
  }

  async #attempt(input: {
    saleId: string;
    buyer: string;
    quantity: number;
    holdTtlMs: number;
  }): Promise<ReserveResult | "again"> {
    const { stock, ledger } = this.#o;
    const holdId = this.#o.newHoldId();
    const reply = await stock.reserve(input.saleId, {
      holdId,
      quantity: input.quantity,
      holdTtlMs: input.holdTtlMs,
    });
    if (reply.kind === "missing") {
      await ledger.recompute(input.saleId);
      return "again";
    }
    if (reply.kind === "refused") return { kind: "sold-out" };
    let bound: BindOutcome;
    try {
      bound = await ledger.bind({
        holdId,
        saleId: input.saleId,
        buyer: input.buyer,
        quantity: input.quantity,
        epoch: reply.epoch,
        expiresAtMs: reply.expiresAtMs,
        nowMs: this.#o.clock.nowMs(),
      });
    } catch (error) {
      await stock.returnHold(input.saleId, holdId).catch(() => undefined); // else the reconciler returns it
      throw error;
    }
    if (bound.kind === "bound") {
      return {
        kind: "held",
        holdId,
        numbers: bound.numbers,
        expiresAtMs: reply.expiresAtMs,
        availableAfter: reply.availableAfter,
      };
    }
    await stock.returnHold(input.saleId, holdId);
    if (bound.kind === "stale-epoch") return "again";
    if (bound.kind === "no-ticket") return { kind: "sold-out" };
    return bound;
  }
}
