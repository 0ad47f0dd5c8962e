/**
 * The webhooks client library's error registry (`WEBHOOKS_CLIENT_*`), kept apart from the
 * service's `storeErrors`: these surface in the application that embeds the client, where a
 * caller must tell "the service said no" (REJECTED, with the service's own `code` and field
 * errors: fix the request, a retry cannot help) from "the same Idempotency-Key already names
 * another event" (IDEMPOTENCY_CONFLICT) from "we never got an answer we could use"
 * (UNAVAILABLE, after the client's bounded retries; `mayHaveBeenProcessed` says whether the
 * last try could have reached the service).
 *
 * @example
 * if (webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_REJECTED")) log(error.fields.code, error.fields.errors);
 */
import { defineErrors } from "@casebook/kit/errors";

export const webhooksClientErrors = defineErrors({
  WEBHOOKS_CLIENT_CONFIG_INVALID: {
    status: 400,
    message: "A client option is out of range; `field` names it and `expected` says what it accepts.",
  },
  WEBHOOKS_CLIENT_REJECTED: {
    status: 400,
    message:
      "The webhooks service refused the request (`status`, its `code` and field `errors`); fix the request, a retry will not help.",
  },
  WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT: {
    status: 409,
    message:
      "This Idempotency-Key already names an event with another type or payload; use a new key for a new event.",
  },
  WEBHOOKS_CLIENT_UNAVAILABLE: {
    status: 503,
    message:
      "The webhooks service did not answer usefully after `attempts` tries (`lastStatus` or the cause); retry later.",
  },
  WEBHOOKS_CLIENT_RESPONSE_INVALID: {
    status: 502,
    message: "The webhooks service answered with a body this client cannot read; `status` says which answer.",
  },
});
