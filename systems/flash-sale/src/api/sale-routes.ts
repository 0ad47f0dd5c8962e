/**
 * The buyer's routes and the operator's: a sale's global status (cacheable for a second), a
 * reservation (the checkout: Redis script, then the PostgreSQL hold), the hold and its order,
 * and pay (held → charging with its charge queued: the buyer sees "payment processing").
 *
 *   POST /v1/admin/sales             (admin token) 201 the sale, its tickets and its stock
 *   GET  /v1/sales/{saleId}          200 status: available, soldOut
 *   POST /v1/sales/{saleId}/holds    201 a hold with its ticket numbers; 409 sold out / buyer has one; 422 over the cap
 *   GET  /v1/holds/{holdId}          200 the hold, its state and its order once paid
 *   POST /v1/holds/{holdId}/pay      202 charging; 409 expired / not payable
 */
import { bearerSecurity, bearerToken, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import type { Checkout } from "../domain/checkout.ts";
import type { HoldState } from "../domain/hold-lifecycle.ts";
import { errors } from "../errors.ts";
import {
  createSale,
  getHold,
  getOrder,
  getSale,
  type Hold,
  type Sale,
  startCharge,
} from "../store/sale-repository.ts";
import type { StockStore } from "../store/stock-store.ts";
import type { RoomTicker } from "../workers/room-ticker.ts";
import type { Admissions } from "./admission.ts";
import {
  admissionHeaders,
  createSaleBody,
  HOLD_ID_PATTERN,
  holdParams,
  holdView,
  reserveBody,
  SALE_ID_PATTERN,
  saleParams,
  saleView,
} from "./sale-schemas.ts";

export interface SaleRoutesOptions {
  db: Database;
  stock: StockStore;
  checkout: Checkout;
  clock: Clock;
  randomHex: (bytes: number) => string;
  holdTtlMs: number;
  recheckMs: number;
  /** Undefined: no admin routes. */
  adminToken: string | undefined;
  rooms: RoomTicker;
  admissions: Admissions;
}

const MESSAGES: Record<HoldState, string> = {
  held: "Tickets held: pay before expiresAt or they go back to the sale.",
  charging: "Payment processing: your tickets stay yours while the charge goes through.",
  paid: "Paid: the order is confirmed.",
  released: "Released: these tickets went back to the sale.",
};

const saleIdRe = new RegExp(SALE_ID_PATTERN);
const holdIdRe = new RegExp(HOLD_ID_PATTERN);

async function saleJson(stock: StockStore, sale: Sale) {
  const view = await stock.view(sale.id);
  const available = Math.max(0, view.available);
  return {
    id: sale.id,
    name: sale.name,
    tickets: sale.tickets,
    available,
    soldOut: view.available === 0,
    perBuyerMax: sale.perBuyerMax,
    holdTtlMs: sale.holdTtlMs,
    priceMinor: Number(sale.priceMinor),
    currency: sale.currency,
    opensAt: new Date(sale.opensAtMs).toISOString(),
  };
}

async function holdJson(db: Database, hold: Hold) {
  const order = hold.state === "paid" ? await getOrder(db, hold.id) : undefined;
  return {
    id: hold.id,
    saleId: hold.saleId,
    buyer: hold.buyer,
    quantity: hold.quantity,
    numbers: hold.numbers,
    state: hold.state,
    releaseReason: hold.releaseReason,
    expiresAt: new Date(hold.expiresAtMs).toISOString(),
    order: order
      ? {
          paymentId: order.paymentId,
          amountMinor: Number(order.amountMinor),
          createdAt: new Date(order.createdAtMs).toISOString(),
        }
      : null,
    message: MESSAGES[hold.state],
  };
}

async function saleOr404(db: Database, saleId: string): Promise<Sale> {
  const sale = saleIdRe.test(saleId) ? await getSale(db, saleId) : undefined;
  if (sale === undefined) throw errors.create("SALE_NOT_FOUND", { fields: { saleId } });
  return sale;
}

async function holdOr404(db: Database, holdId: string): Promise<Hold> {
  const hold = holdIdRe.test(holdId) ? await getHold(db, holdId) : undefined;
  if (hold === undefined) throw errors.create("HOLD_NOT_FOUND", { fields: { holdId } });
  return hold;
}

export async function registerSaleRoutes(app: FastifyInstance, o: SaleRoutesOptions): Promise<void> {
  const tags = ["sales"];
  app.get<{ Params: { saleId: string } }>(
    "/v1/sales/:saleId",
    {
      schema: {
        summary: "A sale's global status",
        tags,
        params: saleParams,
        response: { 200: saleView },
        errorCodes: ["SALE_NOT_FOUND"],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const sale = await saleOr404(o.db, request.params.saleId);
      // The same answer for everyone: a CDN may serve it for a second (FS-12).
      reply.header("cache-control", "public, max-age=1");
      return saleJson(o.stock, sale);
    },
  );

  app.post<{
    Params: { saleId: string };
    Body: { quantity: number };
    Headers: { authorization?: string; "x-entrant-secret"?: string };
  }>(
    "/v1/sales/:saleId/holds",
    {
      schema: {
        summary: "Reserve tickets with an admission token: a hold with its numbers, for the sale's hold TTL",
        tags,
        security: bearerSecurity,
        params: saleParams,
        headers: admissionHeaders,
        body: reserveBody,
        response: { 201: holdView },
        errorCodes: [
          "SALE_NOT_FOUND",
          "SALE_NOT_OPEN",
          "SALE_SOLD_OUT",
          "BUYER_HAS_HOLD",
          "BUYER_OVER_CAP",
          "ADMISSION_REQUIRED",
          "ADMISSION_INVALID",
          "ADMISSION_NOT_YOURS",
          "ADMISSION_EXPIRED",
        ],
      },
      config: { accessLog: "sampled" },
    },
    async (request, reply) => {
      const sale = await saleOr404(o.db, request.params.saleId);
      const { quantity } = request.body;
      // FS-13: only a valid token, bound to this entrant's secret, of a live checkout slot passes.
      const buyer = o.admissions.check(
        bearerToken(request.headers.authorization),
        request.headers["x-entrant-secret"],
        sale.id,
      );
      const room = await o.rooms.sale(sale.id);
      if (room === undefined || !(await o.rooms.port.heartbeat(room, buyer))) {
        throw errors.create("ADMISSION_EXPIRED", { fields: { saleId: sale.id, user: buyer } });
      }
      if (o.clock.nowMs() < sale.opensAtMs) {
        throw errors.create("SALE_NOT_OPEN", {
          fields: { saleId: sale.id, opensAt: new Date(sale.opensAtMs).toISOString() },
        });
      }
      if (quantity > sale.perBuyerMax) {
        throw errors.create("BUYER_OVER_CAP", {
          detail: `quantity ${quantity} is above this sale's per-buyer cap of ${sale.perBuyerMax}`,
          fields: { field: "/body/quantity", perBuyerMax: sale.perBuyerMax },
        });
      }
      const r = await o.checkout.reserve({ saleId: sale.id, buyer, quantity, holdTtlMs: sale.holdTtlMs });
      if (r.kind === "sold-out") {
        await o.rooms.port.leave(room, buyer); // nothing to buy: the slot goes to the next entrant at once
        throw errors.create("SALE_SOLD_OUT", { fields: { saleId: sale.id } });
      }
      if (r.kind === "buyer-has-hold")
        throw errors.create("BUYER_HAS_HOLD", { fields: { saleId: sale.id, buyer } });
      if (r.kind === "unknown-sale") throw errors.create("SALE_NOT_FOUND", { fields: { saleId: sale.id } });
      if (r.kind === "over-cap") {
        throw errors.create("BUYER_OVER_CAP", {
          detail: `this buyer has ${r.owned} of this sale already; ${quantity} more goes above the cap of ${sale.perBuyerMax}`,
          fields: { field: "/body/quantity", perBuyerMax: sale.perBuyerMax, owned: r.owned },
        });
      }
      const hold = await getHold(o.db, r.holdId);
      if (hold === undefined) throw new Error(`hold ${r.holdId} vanished after its reservation`);
      return reply
        .code(201)
        .header("location", `/v1/holds/${hold.id}`)
        .send(await holdJson(o.db, hold));
    },
  );

  app.get<{ Params: { holdId: string } }>(
    "/v1/holds/:holdId",
    {
      schema: {
        summary: "A hold, its state and its order",
        tags,
        params: holdParams,
        response: { 200: holdView },
        errorCodes: ["HOLD_NOT_FOUND"],
      },
    },
    async (request) => holdJson(o.db, await holdOr404(o.db, request.params.holdId)),
  );

  app.post<{ Params: { holdId: string } }>(
    "/v1/holds/:holdId/pay",
    {
      schema: {
        summary: "Pay for a hold: its charge is queued, the answer is 'payment processing'",
        tags,
        params: holdParams,
        response: { 202: holdView },
        errorCodes: ["HOLD_NOT_FOUND", "HOLD_EXPIRED", "HOLD_NOT_PAYABLE"],
      },
    },
    async (request, reply) => {
      const hold = await holdOr404(o.db, request.params.holdId);
      const started = await startCharge(o.db, { holdId: hold.id, nowMs: o.clock.nowMs() });
      if (started.won) {
        // The buyer is done with checkout: its slot goes to the next entrant (FS-13's cap).
        const room = await o.rooms.sale(hold.saleId);
        if (room !== undefined) await o.rooms.port.leave(room, hold.buyer);
        return reply.code(202).send(await holdJson(o.db, started.hold));
      }
      const now = started.hold ?? hold;
      if (now.state === "released" || (now.state === "held" && now.expiresAtMs <= o.clock.nowMs())) {
        throw errors.create("HOLD_EXPIRED", {
          fields: { holdId: hold.id, state: now.state, releaseReason: now.releaseReason },
        });
      }
      throw errors.create("HOLD_NOT_PAYABLE", {
        detail: `the hold is ${now.state}; only a held hold can be paid`,
        fields: { holdId: hold.id, holdState: now.state },
      });
    },
  );

  const { adminToken } = o;
  if (adminToken === undefined) return;
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "flash-sale", token: adminToken }));
    scope.post<{
      Body: {
        id?: string;
        name: string;
        tickets: number;
        perBuyerMax?: number;
        holdTtlMs?: number;
        priceMinor: number;
        currency: string;
        opensAt?: string;
      };
    }>(
      "/v1/admin/sales",
      {
        schema: {
          summary: "Create a sale: its numbered tickets in PostgreSQL, its counter in the hot store",
          tags: ["admin"],
          security: bearerSecurity,
          body: createSaleBody,
          response: { 201: saleView },
          errorCodes: ["SALE_EXISTS"],
        },
      },
      async (request, reply) => {
        const b = request.body;
        const nowMs = o.clock.nowMs();
        const sale = await createSale(
          o.db,
          {
            id: b.id ?? `s-${o.randomHex(8)}`,
            name: b.name,
            tickets: b.tickets,
            perBuyerMax: b.perBuyerMax ?? 4,
            holdTtlMs: b.holdTtlMs ?? o.holdTtlMs,
            priceMinor: BigInt(b.priceMinor),
            currency: b.currency,
            opensAtMs: b.opensAt === undefined ? nowMs : Date.parse(b.opensAt),
          },
          nowMs,
        );
        if (sale === undefined)
          throw errors.create("SALE_EXISTS", { fields: { field: "/body/id", saleId: b.id } });
        await o.stock.restore(sale.id, {
          epoch: sale.stockEpoch,
          available: sale.tickets,
          carried: [],
          recheckMs: o.recheckMs,
        });
        return reply
          .code(201)
          .header("location", `/v1/sales/${sale.id}`)
          .send(await saleJson(o.stock, sale));
      },
    );
  });
}
