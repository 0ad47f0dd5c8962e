/**
 * The acquirer's public API, the part the payments service calls: authorize (once
 * per idempotency key), capture, void, refund, the status queries by key (PY-06 for an
 * authorization, PY-15 for a refund) and the D+1 settlement file (PY-10). Every route runs
 * under the simulator base's fault hooks: latency, errors, outages and lost responses apply
 * here and nowhere else.
 *
 * @example
 * createSimulator({ ..., routes: (v1, faults) => registerAcquirerRoutes(v1, { state, faults }) });
 */
import type { FaultInjector } from "@casebook/infra/http/simulator-faults";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import type { Behaviour } from "./acquirer-behaviour.ts";
import { acquirerErrors } from "./acquirer-errors.ts";
import {
  authorizationIdParams,
  authorizationResult,
  authorizationView,
  authorizeBody,
  captureBody,
  dateParams,
  keyParams,
  refundBody,
  refundResult,
} from "./acquirer-schemas.ts";
import type { AcquirerState } from "./acquirer-state.ts";
import { authorizationResultOf, authorizationViewOf, refundResultOf } from "./acquirer-views.ts";
import type { ArrivalRecord } from "./arrival-record.ts";
import {
  applyDifferences,
  renderSettlementCsv,
  type SettlementRow,
  settlementRows,
  utcDay,
} from "./settlement-file.ts";

/**
 * When a day's settlement file is published: `d+1` once the UTC day is over (a bank's file),
 * `immediate` at once with the day's operations so far — a demo setting, so today's payments
 * reconcile in one sitting (a later fetch of the same day may hold more rows).
 */
export const SETTLEMENT_TIMINGS = ["d+1", "immediate"] as const;
export type SettlementTiming = (typeof SETTLEMENT_TIMINGS)[number];

export interface AcquirerRouteDeps {
  readonly state: AcquirerState;
  readonly faults: FaultInjector<Behaviour>;
  /** Every /v1 call counted per second as it arrives (GET /admin/arrivals). */
  readonly arrivals: ArrivalRecord;
  /** Default `d+1`. */
  readonly settlement?: SettlementTiming;
}

/** Marks a replayed answer; the body is the stored one, byte for byte. */
export const REPLAYED_HEADER = "idempotent-replayed";

type Money = string | number;
const tags = ["acquirer"];

/**
 * A day's true rows, once the day is over (D+1): a file asked for earlier would be
 * missing the rest of the day's operations, so it is refused, as a bank would — unless the
 * simulator was started with `settlement: "immediate"`, which publishes the day so far.
 */
export function closedDayRows(
  deps: AcquirerRouteDeps,
  date: string,
): { day: NonNullable<ReturnType<typeof utcDay>>; rows: SettlementRow[] } {
  const day = utcDay(date);
  if (!day) {
    throw commonErrors.create("REQUEST_INVALID", {
      fields: { errors: [{ field: "/params/date", message: "is not a calendar date" }] },
    });
  }
  if (deps.settlement !== "immediate" && deps.state.clock.nowMs() < day.endMs) {
    throw acquirerErrors.create("ACQUIRER_SETTLEMENT_NOT_READY", {
      fields: { date, readyAt: new Date(day.endMs).toISOString() },
    });
  }
  const operations = deps.state.operationsBetween(day.startMs, day.endMs);
  return { day, rows: settlementRows(operations, { feeBps: deps.faults.behaviour.feeBps }) };
}

function registerAuthorize(app: FastifyInstance, { state, faults }: AcquirerRouteDeps): void {
  app.post<{
    Body: {
      idempotencyKey: string;
      merchantId: string;
      amountMinor: Money;
      currency: string;
      cardToken: string;
    };
  }>(
    "/v1/authorizations",
    {
      config: { mutating: true },
      schema: {
        summary: "Authorize a card payment, once per idempotency key",
        tags,
        body: authorizeBody,
        response: { 200: authorizationResult },
      },
    },
    async (request, reply) => {
      const { authorization, replayed } = state.authorize(
        { ...request.body, amountMinor: BigInt(request.body.amountMinor) },
        { declineRate: faults.behaviour.declineRate, merchantRatePerS: faults.behaviour.merchantRatePerS },
      );
      if (replayed) reply.header(REPLAYED_HEADER, "true");
      return faults.respond(request, reply, authorizationResultOf(authorization));
    },
  );
}

function registerCaptureAndVoid(app: FastifyInstance, { state, faults }: AcquirerRouteDeps): void {
  app.post<{ Params: { id: string }; Body: { amountMinor?: Money } | undefined }>(
    "/v1/authorizations/:id/capture",
    {
      config: { mutating: true },
      schema: {
        summary: "Capture an approved authorization (all of it by default; at most the authorized amount)",
        tags,
        params: authorizationIdParams,
        body: captureBody,
        response: { 200: authorizationView },
      },
    },
    async (request, reply) => {
      const amount = request.body?.amountMinor;
      const { authorization, replayed } = state.capture(
        request.params.id,
        amount === undefined ? undefined : BigInt(amount),
      );
      if (replayed) reply.header(REPLAYED_HEADER, "true");
      return faults.respond(request, reply, authorizationViewOf(authorization));
    },
  );
  app.post<{ Params: { id: string } }>(
    "/v1/authorizations/:id/void",
    {
      config: { mutating: true },
      schema: {
        summary: "Void an approved, uncaptured authorization",
        tags,
        params: authorizationIdParams,
        response: { 200: authorizationView },
      },
    },
    async (request, reply) => {
      const { authorization, replayed } = state.void(request.params.id);
      if (replayed) reply.header(REPLAYED_HEADER, "true");
      return faults.respond(request, reply, authorizationViewOf(authorization));
    },
  );
}

function registerRefund(app: FastifyInstance, { state, faults }: AcquirerRouteDeps): void {
  app.post<{ Params: { id: string }; Body: { idempotencyKey: string; amountMinor: Money } }>(
    "/v1/authorizations/:id/refunds",
    {
      config: { mutating: true },
      schema: {
        summary: "Refund part or all of a capture, once per refund idempotency key",
        tags,
        params: authorizationIdParams,
        body: refundBody,
        response: { 200: refundResult },
      },
    },
    async (request, reply) => {
      const { refund, replayed } = state.refund(request.params.id, {
        idempotencyKey: request.body.idempotencyKey,
        amountMinor: BigInt(request.body.amountMinor),
      });
      if (replayed) reply.header(REPLAYED_HEADER, "true");
      return faults.respond(request, reply, refundResultOf(refund));
    },
  );
}

function registerQueries(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  app.get<{ Params: { key: string } }>(
    "/v1/authorizations/by-key/:key",
    {
      schema: {
        summary: "The authorization made with an idempotency key: ask this after a timeout (PY-06)",
        tags,
        params: keyParams,
        response: { 200: authorizationView },
      },
    },
    async (request) => authorizationViewOf(deps.state.getByKey(request.params.key)),
  );
  app.get<{ Params: { key: string } }>(
    "/v1/refunds/by-key/:key",
    {
      schema: {
        summary: "The refund made with a refund idempotency key: ask this after a refund's answer was lost",
        tags,
        params: keyParams,
        response: { 200: refundResult },
      },
    },
    async (request) => refundResultOf(deps.state.getRefundByKey(request.params.key)),
  );
  app.get<{ Params: { id: string } }>(
    "/v1/authorizations/:id",
    {
      schema: {
        summary: "An authorization by id",
        tags,
        params: authorizationIdParams,
        response: { 200: authorizationView },
      },
    },
    async (request) => authorizationViewOf(deps.state.get(request.params.id)),
  );
  app.get<{ Params: { date: string } }>(
    "/v1/settlements/:date.csv",
    {
      schema: {
        summary: "The D+1 settlement file: captures and refunds of a UTC day, as CSV",
        tags: ["settlement"],
        params: dateParams,
        errorCodes: ["ACQUIRER_SETTLEMENT_NOT_READY"],
        // Sent as text (a string is never re-serialized): the schema documents the body.
        response: { 200: { content: { "text/csv": { schema: { type: "string" } } } } },
      },
    },
    async (request, reply) => {
      const { date } = request.params;
      const { rows } = closedDayRows(deps, date);
      const published = applyDifferences(rows, deps.state.differences(date));
      reply.header("content-type", "text/csv; charset=utf-8");
      reply.header("content-disposition", `attachment; filename="settlement-${date}.csv"`);
      return renderSettlementCsv(published);
    },
  );
}

/** Registers the acquirer's API on `app`, a scope the simulator base has installed the fault hooks on. */
export function registerAcquirerRoutes(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  // After the outage hook (the base installs it first): a refused call is not an arrival.
  app.addHook("onRequest", async (request) => {
    deps.arrivals.record(
      `${request.method} ${request.routeOptions.url ?? "(no route)"}`,
      deps.state.clock.nowMs(),
    );
  });
  registerAuthorize(app, deps);
  registerCaptureAndVoid(app, deps);
  registerRefund(app, deps);
  registerQueries(app, deps);
}
