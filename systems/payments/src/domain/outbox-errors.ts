/**
 * The outbox's error codes (PY-11). Kept in their own file until the lead merges the
 * payments registry. Enqueue errors are bugs of the calling code (an event that is too
 * large or malformed), so they abort the caller's transaction rather than lose the event.
 *
 * @example
 * if (outboxErrors.is(err, "PAYMENTS_OUTBOX_PAYLOAD_TOO_LARGE")) log.error({ bytes: err.fields.bytes });
 */
import { defineErrors } from "@casebook/kit/errors";

export const outboxErrors = defineErrors({
  PAYMENTS_OUTBOX_EVENT_INVALID: {
    status: 500,
    message:
      "An outbox event is malformed (see `field`): ordering key 1–255 characters, type like `payment.captured`, payload a JSON object.",
  },
  PAYMENTS_OUTBOX_PAYLOAD_TOO_LARGE: {
    status: 500,
    message:
      "An outbox event's payload is larger than `maxBytes`; publish a reference (an id) instead of the whole document.",
  },
  PAYMENTS_OUTBOX_EVENT_DUPLICATE: {
    status: 500,
    message: "An outbox event with this `eventId` already exists; event ids must be unique per event.",
  },
  PAYMENTS_OUTBOX_PUBLISH_FAILED: {
    status: 502,
    message: "The event consumer refused or did not answer in time; the relay retries it with backoff.",
  },
});

export type OutboxErrorCode = keyof typeof outboxErrors.specs;
