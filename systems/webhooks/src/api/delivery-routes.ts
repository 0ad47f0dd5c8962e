/**
 * The delivery API (WH-02 status queries, WH-12, WH-22), every query scoped to the caller:
 *
 *   GET  /v1/webhook-deliveries                 newest first; filters state, subscriptionId, eventId
 *   GET  /v1/webhook-deliveries/{id}
 *   GET  /v1/webhook-deliveries/{id}/attempts   in attempt order
 *   POST /v1/webhook-deliveries/{id}/replay     202: a new attempt cycle, same delivery id and webhook-id
 *
 * Another tenant's id — guessed, leaked or enumerated — answers 404 exactly like an id that
 * does not exist, for reads and replay alike (WH-12, WH-25). Replay is refused with a
 * problem the caller can act on: 410 WEBHOOK_REPLAY_PAYLOAD_EXPIRED once retention deleted
 * the payload (WH-22: nothing to send, the history stays), 409 while the delivery is still
 * being attempted or its subscription is disabled.
 *
 * @example
 * registerDeliveryRoutes(scope, { db, clock, randomBytes, tenantOf: auth.tenantOf, settings });
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import { storeErrors } from "../errors.ts";
import {
  type AttemptView,
  type DeliveryFilter,
  type DeliveryView,
  getDelivery,
  listAttempts,
  listDeliveries,
  replayDelivery,
} from "../store/delivery-queries.ts";
import type { ApiContext } from "./api-context.ts";
import { idParams, iso, pageOf, pageQuery } from "./api-schemas.ts";
import { attemptView, deliveryListQuery, deliveryView } from "./delivery-schemas.ts";
import { withFieldPointers } from "./field-errors.ts";

const tags = ["deliveries"];

export function toDeliveryJson(d: DeliveryView) {
  return {
    id: d.id,
    eventId: d.eventId,
    eventType: d.eventType,
    subscriptionId: d.subscriptionId,
    state: d.state,
    attempts: d.attempts,
    nextAttemptAt: iso(d.nextAttemptAt),
    deadlineAt: d.deadlineAt.toISOString(),
    lastStatus: d.lastStatus,
    lastAttemptAt: iso(d.lastAttemptAt),
    stateReason: d.stateReason,
    orderingKey: d.orderingKey,
    replays: d.replays,
    createdAt: d.createdAt.toISOString(),
    finishedAt: iso(d.finishedAt),
  };
}

function toAttemptJson(a: AttemptView) {
  return { ...a, startedAt: a.startedAt.toISOString() };
}

function notFound(id: string): Error {
  return storeErrors.create("WEBHOOK_DELIVERY_NOT_FOUND", { fields: { id } });
}

function registerReads(app: FastifyInstance, context: ApiContext): void {
  app.get<{ Querystring: DeliveryFilter }>(
    "/v1/webhook-deliveries",
    {
      schema: {
        errorCodes: ["WEBHOOK_CURSOR_INVALID"],
        summary: "Your deliveries, newest first (cursor pagination; filter by state, subscription, event)",
        tags,
        security: bearerSecurity,
        querystring: deliveryListQuery,
        response: { 200: pageOf(deliveryView) },
      },
    },
    async (request) => {
      const page = await withFieldPointers("/querystring", () =>
        listDeliveries(context.db, context.tenantOf(request), request.query),
      );
      return { items: page.items.map(toDeliveryJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/v1/webhook-deliveries/:id",
    {
      schema: {
        errorCodes: ["WEBHOOK_DELIVERY_NOT_FOUND"],
        summary: "One of your deliveries: state, attempts so far, next attempt, deadline",
        tags,
        security: bearerSecurity,
        params: idParams,
        response: { 200: deliveryView },
      },
    },
    async (request) => {
      const found = await getDelivery(context.db, context.tenantOf(request), request.params.id);
      if (!found) throw notFound(request.params.id);
      return toDeliveryJson(found);
    },
  );

  app.get<{ Params: { id: string }; Querystring: { limit?: number; cursor?: string } }>(
    "/v1/webhook-deliveries/:id/attempts",
    {
      schema: {
        errorCodes: ["WEBHOOK_DELIVERY_NOT_FOUND", "WEBHOOK_CURSOR_INVALID"],
        summary: "The attempts of one of your deliveries, in order (cursor pagination)",
        tags,
        security: bearerSecurity,
        params: idParams,
        querystring: pageQuery,
        response: { 200: pageOf(attemptView) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const page = await withFieldPointers("/querystring", () =>
        listAttempts(context.db, context.tenantOf(request), id, request.query),
      );
      if (!page) throw notFound(id);
      return { items: page.items.map(toAttemptJson), nextCursor: page.nextCursor };
    },
  );
}

export function registerDeliveryRoutes(app: FastifyInstance, context: ApiContext): void {
  registerReads(app, context);
  app.post<{ Params: { id: string } }>(
    "/v1/webhook-deliveries/:id/replay",
    {
      schema: {
        errorCodes: [
          "WEBHOOK_DELIVERY_NOT_FOUND",
          "WEBHOOK_DELIVERY_IN_PROGRESS",
          "WEBHOOK_SUBSCRIPTION_INACTIVE",
          "WEBHOOK_REPLAY_PAYLOAD_EXPIRED",
        ],
        summary: "Send a finished delivery again (same delivery id and webhook-id)",
        description:
          "Refused with 410 once the event's payload passed its retention (WH-22), with 409 while the delivery is still being attempted or its subscription is disabled.",
        tags,
        security: bearerSecurity,
        params: idParams,
        response: { 202: deliveryView },
      },
    },
    async (request, reply) => {
      const nowMs = context.clock.nowMs();
      const replayed = await replayDelivery(context.db, context.tenantOf(request), request.params.id, {
        nowMs,
      });
      return reply.code(202).send(toDeliveryJson(replayed));
    },
  );
}
