/**
 * JSON schemas of the delivery API: the delivery log a tenant reads (WH-02 "delivery
 * status queries"), its attempts, and replay.
 *
 * @example
 * app.get("/v1/webhook-deliveries", { schema: { querystring: deliveryListQuery, response: { 200: pageOf(deliveryView) } } }, h);
 */
import { FINAL_STATES } from "../store/delivery-results.ts";
import { instant, nullableInstant, nullableInt, nullableString, pageQueryProperties } from "./api-schemas.ts";

export const DELIVERY_STATES = ["pending", "in_flight", ...FINAL_STATES] as const;

export const deliveryListQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...pageQueryProperties,
    state: { type: "string", enum: DELIVERY_STATES },
    subscriptionId: { type: "string", minLength: 1, maxLength: 100 },
    eventId: { type: "string", minLength: 1, maxLength: 100 },
  },
} as const;

export const deliveryView = {
  type: "object",
  required: [
    "id",
    "eventId",
    "eventType",
    "subscriptionId",
    "state",
    "attempts",
    "nextAttemptAt",
    "deadlineAt",
    "lastStatus",
    "lastAttemptAt",
    "stateReason",
    "orderingKey",
    "replays",
    "createdAt",
    "finishedAt",
  ],
  properties: {
    id: { type: "string" },
    eventId: { type: "string", description: "The `webhook-id` the receiver dedupes on (WH-14)" },
    eventType: { type: "string" },
    subscriptionId: { type: "string" },
    state: { type: "string", enum: DELIVERY_STATES },
    attempts: { type: "integer" },
    nextAttemptAt: { ...nullableInstant, description: "null once final" },
    deadlineAt: { ...instant, description: "No attempt starts after it (WH-18)" },
    lastStatus: nullableInt,
    lastAttemptAt: nullableInstant,
    stateReason: nullableString,
    orderingKey: nullableString,
    replays: { type: "integer" },
    createdAt: instant,
    finishedAt: nullableInstant,
  },
} as const;

export const attemptView = {
  type: "object",
  required: ["attemptNo", "startedAt", "durationMs", "responseClass", "status", "errorPhase", "error"],
  properties: {
    attemptNo: { type: "integer" },
    startedAt: instant,
    durationMs: { type: "integer" },
    responseClass: { type: "string", description: "`2xx`, `5xx`, `timeout`, `connect_error`, …" },
    status: nullableInt,
    errorPhase: { ...nullableString, description: "dns, connect, headers, body or policy" },
    error: nullableString,
  },
} as const;
