/**
 * The console's flash-sale scenario (FS-01, FS-05 shown live): a sale of its own (`tickets`
 * numbered tickets, one per buyer), created in this service's store as the admin route creates
 * one, then `buyers` concurrent reservations through the production checkout — the reserve
 * script on the hot stock, then the hold in SQL. Each answer is a point (its arrival order,
 * the tickets held so far), one line for "held" and one for "sold out"; the sentence counts
 * them against the store's own audit: holds bound, tickets never sold twice, the counter at 0.
 * The waiting room in front is FS-12's subject, not this one: the race is on the inventory.
 *
 * @example
 * new ScenarioRuns([saleRaceScenario({ db, stock, checkout, recheckMs })]);
 */
import { randomBytes } from "node:crypto";
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import type { Database } from "@casebook/infra/sql/sql";
import type { Checkout } from "../domain/checkout.ts";
import { auditSale, createSale } from "../store/sale-repository.ts";
import type { StockStore } from "../store/stock-store.ts";

export interface SaleRaceDeps {
  db: Database;
  stock: StockStore;
  checkout: Checkout;
  /** When carried holds are looked at next (the service's setting). */
  recheckMs: number;
  /** Tickets of the scenario's sale. Default 50. */
  tickets?: number;
  /** Buyers racing at once, one ticket each. Default 500. */
  buyers?: number;
}

/** Holds of the scenario's sale live this long, then the reconciler returns them. */
const HOLD_TTL_MS = 60_000;

export function saleRaceScenario(deps: SaleRaceDeps): Scenario {
  const tickets = deps.tickets ?? 50;
  const buyers = deps.buyers ?? 500;
  return {
    id: "sale-race",
    title: `${buyers} buyers for ${tickets} tickets, at once`,
    line: `${buyers} concurrent reservations for a sale of ${tickets} tickets through the checkout (reserve script, then the hold in SQL): exactly ${tickets} held, never one more (FS-01, FS-05).`,
    xLabel: "answer, in arrival order",
    yLabel: "tickets held so far",
    run: async (ctx) => {
      const nowMs = Date.now();
      const id = `scenario-${randomBytes(6).toString("hex")}`;
      const sale = await createSale(
        deps.db,
        {
          id,
          name: `scenario: ${buyers} buyers, ${tickets} tickets`,
          tickets,
          perBuyerMax: 1,
          holdTtlMs: HOLD_TTL_MS,
          priceMinor: 5_000n,
          currency: "BRL",
          opensAtMs: nowMs,
        },
        nowMs,
      );
      if (sale === undefined) throw new Error(`sale ${id} exists already`);
      // As POST /v1/admin/sales does: the hot counter starts at the sale's tickets, at its epoch.
      await deps.stock.restore(sale.id, {
        epoch: sale.stockEpoch,
        available: sale.tickets,
        carried: [],
        recheckMs: deps.recheckMs,
      });
      let answered = 0;
      let held = 0;
      const tally = { held: 0, soldOut: 0, other: 0 };
      const buy = async (b: number) => {
        ctx.signal.throwIfAborted();
        const r = await deps.checkout.reserve({
          saleId: sale.id,
          buyer: `buyer-${b}`,
          quantity: 1,
          holdTtlMs: HOLD_TTL_MS,
        });
        answered += 1;
        if (r.kind === "held") {
          held += r.numbers.length;
          tally.held += 1;
          ctx.point("held", answered, held);
        } else if (r.kind === "sold-out") {
          tally.soldOut += 1;
          ctx.point("sold out", answered, held);
        } else {
          tally.other += 1;
          ctx.point(r.kind, answered, held);
        }
        ctx.progress(answered / buyers);
      };
      await Promise.all(Array.from({ length: buyers }, (_, b) => buy(b)));
      const audit = await auditSale(deps.db, sale.id);
      const counter = (await deps.stock.view(sale.id)).available;
      return (
        `${buyers} buyers for ${tickets} tickets at once: ${tally.held} held, ${tally.soldOut} sold out, ` +
        `${tally.other} other; the store holds ${audit.holdsByState.held} holds binding ${audit.bound} of ` +
        `${audit.tickets} tickets, the hot counter at ${counter} — ${Math.max(0, audit.bound - tickets)} oversold.`
      );
    },
  };
}
