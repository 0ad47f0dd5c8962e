/**
 * The webhooks error registry, grouped by area: the store's codes (tenants, subscriptions,
 * events, deliveries, replay, pagination, lease configuration), the delivery core's, and the
 * list of every registry the API may answer with, for createService's `errors` option.
 * Every code is `WEBHOOK_*`; createService refuses a code defined twice with different
 * statuses, and test/api-errors.test.ts refuses any code defined twice at all.
 *
 * @example
 * const service = createService({ name: "webhooks", version, errors: webhooksErrorRegistries });
 * if (storeErrors.is(err, "WEBHOOK_REPLAY_PAYLOAD_EXPIRED")) reply.code(410);
 */

import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { defineErrors, type ErrorRegistry } from "@casebook/kit/errors";

/** The store's area: tenants, subscriptions, events, deliveries, replay, pagination, lease configuration. */
export const storeErrors = defineErrors({
  WEBHOOK_TENANT_INVALID: {
    status: 400,
    message: "A tenant field is invalid (see `field`): fix it and send the request again.",
  },
  WEBHOOK_TENANT_NOT_FOUND: {
    status: 404,
    message: "No tenant with this id; create the tenant before sending its events.",
  },
  WEBHOOK_EVENT_INVALID: {
    status: 400,
    message:
      "The event is malformed (see `field`): type like `invoice.paid`, payload a JSON object, idempotency key 1–255 characters.",
  },
  WEBHOOK_EVENT_TOO_LARGE: {
    status: 413,
    message: "The event payload is larger than `maxBytes`; send a reference (an id) instead of the document.",
  },
  WEBHOOK_EVENT_NOT_FOUND: {
    status: 404,
    message: "No event with this id for your tenant.",
  },
  WEBHOOK_IDEMPOTENCY_CONFLICT: {
    status: 409,
    message:
      "This idempotency key was already used for a different event (type or payload differ); use a new key for a new event.",
  },
  WEBHOOK_SUBSCRIPTION_INVALID: {
    status: 400,
    message: "A subscription field is invalid (see `field`): fix it and send the request again.",
  },
  WEBHOOK_SUBSCRIPTION_NOT_FOUND: {
    status: 404,
    message: "No subscription with this id for your tenant.",
  },
  WEBHOOK_SUBSCRIPTION_INACTIVE: {
    status: 409,
    message: "The subscription is disabled (see `reason`); enable it before replaying its deliveries.",
  },
  WEBHOOK_DELIVERY_NOT_FOUND: {
    status: 404,
    message: "No delivery with this id for your tenant.",
  },
  WEBHOOK_DELIVERY_IN_PROGRESS: {
    status: 409,
    message: "The delivery is still being attempted; replay it once it reached a final state.",
  },
  WEBHOOK_REPLAY_PAYLOAD_EXPIRED: {
    status: 410,
    message:
      "The event's payload passed its retention period and was deleted, so it cannot be sent again; the delivery history remains readable.",
  },
  WEBHOOK_CURSOR_INVALID: {
    status: 400,
    message: "The pagination cursor is malformed or belongs to another listing; start again without it.",
  },
  WEBHOOK_LEASE_TOO_SHORT: {
    status: 500,
    message:
      "The delivery lease must outlast the HTTP deadline plus headroom, or a second worker may send while the first still waits (see `leaseMs`, `minLeaseMs`).",
  },
});

export type StoreErrorCode = keyof typeof storeErrors.specs;

/**
 * The delivery core's area: URL policy, signatures, scheduling, capacity arithmetic. (The
 * sender's failures are infra's OUTBOUND_* codes: `@casebook/infra/http/outbound-errors`.)
 * Context goes in `fields` (never a secret, never a payload: WH-22 keeps payloads out of logs).
 */
export const deliveryErrors = defineErrors({
  WEBHOOK_URL_INVALID: {
    status: 400,
    message: "The endpoint URL is not a valid absolute http(s) URL; `reason` says what to fix.",
  },
  WEBHOOK_URL_INSECURE: {
    status: 422,
    message: "Endpoint URLs must use https; plain http is only accepted where an operator enabled it.",
  },
  WEBHOOK_URL_FORBIDDEN: {
    status: 422,
    message:
      "The endpoint URL points at an address webhooks never call (loopback, private, link-local, multicast or reserved, see `addressClass`); use a public address.",
  },
  WEBHOOK_SECRET_INVALID: {
    status: 400,
    message: "A signing secret is `whsec_` followed by base64 of 24 to 64 random bytes; generate a new one.",
  },
  WEBHOOK_SECRET_ROTATION_LIMIT: {
    status: 409,
    message:
      "This subscription already has the most live secrets allowed; rotate again after the oldest retires (`retiresAtMs`).",
  },
  WEBHOOK_SIGNATURE_INVALID: {
    status: 401,
    message:
      "The webhook failed verification (`reason`): check the secret, that the raw body is verified unchanged, and the clock.",
  },
  WEBHOOK_REPLAY_DETECTED: {
    status: 409,
    message: "This webhook-id was already accepted inside the tolerance window; a replay is ignored.",
  },
  WEBHOOK_REPLAY_CACHE_FULL: {
    status: 503,
    message: "Too many webhooks inside the tolerance window to remember them all; retry later.",
  },
  WEBHOOK_QUEUE_FULL: {
    status: 429,
    message: "The delivery queue for this `scope` is at its bound (`limit`); slow down and retry later.",
  },
  WEBHOOK_CAPACITY_INVALID: {
    status: 400,
    message: "The capacity inputs are invalid (`field`, `reason`); a drain needs processing above arrival.",
  },
});

export type DeliveryErrorCode = keyof typeof deliveryErrors.specs;

/** Every registry whose codes the webhooks API may answer with (infra's SQL codes too). */
export const webhooksErrorRegistries: readonly ErrorRegistry<string>[] = Object.freeze([
  storeErrors,
  deliveryErrors,
  sqlErrors,
]);
