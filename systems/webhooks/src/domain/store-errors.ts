/**
 * The webhook store's error codes: tenants, subscriptions, events, deliveries, replay,
 * pagination and the lease configuration. Kept in their own file (the delivery core has
 * its own) until the lead merges the system's registry; every code is `WEBHOOK_*`.
 *
 * @example
 * if (storeErrors.is(err, "WEBHOOK_REPLAY_PAYLOAD_EXPIRED")) reply.code(410);
 */
import { defineErrors } from "@casebook/kit/errors";

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
