/**
 * The event API: how a producer that calls over HTTP hands an event in (a producer that
 * shares the database calls `enqueue(tx, …)` inside its own transaction instead, WH-07).
 *
 *   POST /v1/events        validate → event + outbox row in one transaction → 202 with the
 *                          stable event id (the relay and dispatcher fan it out later)
 *   GET  /v1/events/{id}   the event, scoped to the caller (another tenant's id is 404)
 *
 * `Idempotency-Key` makes a retried POST harmless: the same key returns the first event's
 * id (`duplicate: true`) and creates nothing; the same key with another type or payload is
 * 409 WEBHOOK_IDEMPOTENCY_CONFLICT. The payload bound is on its compact JSON text
 * (WEBHOOK_EVENT_TOO_LARGE, 413); the body limit above it only protects memory.
 *
 * @example
 * registerEventRoutes(scope, { db, clock, randomBytes, tenantOf: auth.tenantOf, settings });
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import { storeErrors } from "../errors.ts";
import { getEvent, ingestEvent, type StoredEvent } from "../store/event-repository.ts";
import type { ApiContext } from "./api-context.ts";
import { idParams } from "./api-schemas.ts";
import { eventAccepted, eventBody, eventHeaders, eventView } from "./event-schemas.ts";
import { withFieldPointers } from "./field-errors.ts";

const tags = ["events"];
/**
 * Room in the request body beyond the payload bound: the envelope (`type`) and the
 * whitespace of a pretty-printed payload, which the bound (on compact JSON) does not count.
 */
export const BODY_SLACK_BYTES = 16_384;

/** The request body limit for a payload bound: twice the bound plus slack. */
export function eventBodyLimitBytes(maxPayloadBytes: number): number {
  return 2 * maxPayloadBytes + BODY_SLACK_BYTES;
}

function toEventJson(event: StoredEvent, nowMs: number) {
  return {
    id: event.id,
    type: event.type,
    payload: event.payload,
    payloadBytes: event.payloadBytes,
    payloadExpiresAt: event.payloadExpiresAt.toISOString(),
    payloadExpired: event.payload === null || event.payloadExpiresAt.getTime() <= nowMs,
    idempotencyKey: event.idempotencyKey,
    createdAt: event.createdAt.toISOString(),
  };
}

interface PostEvent {
  Body: { type: string; payload: Record<string, unknown> };
  Headers: { "idempotency-key"?: string };
}

export function registerEventRoutes(app: FastifyInstance, context: ApiContext): void {
  const { db, clock, randomBytes, settings } = context;
  app.post<PostEvent>(
    "/v1/events",
    {
      bodyLimit: eventBodyLimitBytes(settings.maxPayloadBytes),
      schema: {
        errorCodes: ["WEBHOOK_EVENT_INVALID", "WEBHOOK_EVENT_TOO_LARGE", "WEBHOOK_IDEMPOTENCY_CONFLICT"],
        summary: "Send an event to your subscriptions (202: accepted, delivered later)",
        description:
          "Stored with its outbox row in one transaction; fanned out to every active subscription whose filters match. Same Idempotency-Key, same event.",
        tags,
        headers: eventHeaders,
        body: eventBody,
        response: { 202: eventAccepted },
      },
    },
    async (request, reply) => {
      const tenantId = context.tenantOf(request);
      const key = request.headers["idempotency-key"];
      const { type, payload } = request.body;
      const event = await withFieldPointers("/body", () =>
        ingestEvent(
          db,
          tenantId,
          { type, payload, ...(key === undefined ? {} : { idempotencyKey: key }) },
          { nowMs: clock.nowMs(), randomBytes, maxPayloadBytes: settings.maxPayloadBytes },
        ),
      );
      return reply.code(202).header("location", `/v1/events/${event.eventId}`).send({
        id: event.eventId,
        type,
        createdAt: event.createdAt.toISOString(),
        duplicate: !event.created,
      });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/v1/events/:id",
    {
      schema: {
        errorCodes: ["WEBHOOK_EVENT_NOT_FOUND"],
        summary: "One of your events, with its payload until retention deletes it",
        tags,
        security: bearerSecurity,
        params: idParams,
        response: { 200: eventView },
      },
    },
    async (request) => {
      const event = await getEvent(db, context.tenantOf(request), request.params.id);
      if (!event) throw storeErrors.create("WEBHOOK_EVENT_NOT_FOUND", { fields: { id: request.params.id } });
      return toEventJson(event, clock.nowMs());
    },
  );
}
