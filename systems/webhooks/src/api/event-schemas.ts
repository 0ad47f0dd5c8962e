/**
 * JSON schemas of the event API (POST /v1/events, GET /v1/events/{id}). The payload is any
 * JSON object; its size bound is checked on its compact JSON text by the store
 * (WEBHOOK_EVENT_TOO_LARGE), the request body by the route's body limit.
 *
 * @example
 * app.post("/v1/events", { schema: { body: eventBody, headers: eventHeaders, response: { 202: eventAccepted } } }, h);
 */
import { idempotencyKeyHeader } from "@casebook/infra/http/idempotency-key";
import { MAX_EVENT_TYPE_CHARS } from "../domain/store-event-type.ts";
import { instant, nullableString } from "./api-schemas.ts";

/** `invoice.paid`: dotted segments of [A-Za-z0-9_-] (domain/store-event-type.ts says the same). */
export const EVENT_TYPE_PATTERN = "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$";

/** Types under `webhook.` are the system's (`webhook.subscription.quarantined`, …). */
export const RESERVED_EVENT_TYPE_PATTERN = "^webhook\\.";

export const eventBody = {
  type: "object",
  required: ["type", "payload"],
  additionalProperties: false,
  properties: {
    type: {
      type: "string",
      maxLength: MAX_EVENT_TYPE_CHARS,
      pattern: EVENT_TYPE_PATTERN,
      // `webhook.*` is the system's own notices (store/endpoint-health.ts): a tenant's event
      // cannot pass for one at a receiver that acts on it.
      not: { pattern: RESERVED_EVENT_TYPE_PATTERN },
      description:
        "Dotted event type, `invoice.paid`; subscriptions filter on it. `webhook.…` is reserved for the system's own notices",
    },
    payload: {
      type: "object",
      additionalProperties: true,
      description: "The event's data, sent as the webhook body's `data`",
    },
  },
} as const;

export const eventHeaders = {
  type: "object",
  properties: {
    // The one rule (1-255 visible ASCII); a bad key is 400 REQUEST_INVALID naming /headers/idempotency-key.
    "idempotency-key": idempotencyKeyHeader(
      "Same key, same event: a retried POST returns the first event's id and creates nothing",
    ),
  },
} as const;

export const eventAccepted = {
  type: "object",
  required: ["id", "type", "createdAt", "duplicate"],
  properties: {
    id: { type: "string", description: "Stable event id: the `webhook-id` of every delivery of it" },
    type: { type: "string" },
    createdAt: instant,
    duplicate: {
      type: "boolean",
      description: "True when an earlier POST with this Idempotency-Key made it",
    },
  },
} as const;

export const eventView = {
  type: "object",
  required: [
    "id",
    "type",
    "payload",
    "payloadBytes",
    "payloadExpiresAt",
    "payloadExpired",
    "idempotencyKey",
    "createdAt",
  ],
  properties: {
    id: { type: "string" },
    type: { type: "string" },
    payload: {
      type: ["object", "null"],
      additionalProperties: true,
      description: "null once retention deleted it (WH-22)",
    },
    payloadBytes: { type: "integer" },
    payloadExpiresAt: instant,
    payloadExpired: { type: "boolean" },
    idempotencyKey: nullableString,
    createdAt: instant,
  },
} as const;
