/**
 * The delivery core's error codes (`WEBHOOK_*`): URL policy, signatures, scheduling,
 * capacity arithmetic. (The sender's failures are infra's OUTBOUND_* codes since issue 10:
 * `@casebook/infra/http/outbound-errors`.) One registry for these areas until the lead
 * merges the system's registries; the HTTP layer maps each to problem+json. Context goes
 * in `fields` (never a secret, never a payload: WH-22 keeps payloads out of logs).
 *
 * @example
 * throw deliveryErrors.create("WEBHOOK_URL_FORBIDDEN", { fields: { host: "10.0.0.7", addressClass: "private" } });
 * if (deliveryErrors.is(err, "WEBHOOK_QUEUE_FULL")) log.warn({ scope: err.fields.scope });
 */
import { defineErrors } from "@casebook/kit/errors";

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
