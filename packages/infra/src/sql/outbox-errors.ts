/**
 * The transactional outbox's error codes (`outbox.ts`, `outbox-relay.ts`). Enqueue errors are
 * bugs of the calling code (an event too large or malformed): they abort the caller's
 * transaction rather than lose the event. `OUTBOX_PUBLISH_FAILED` is what a publisher throws
 * when its consumer refused or did not answer (the relay throws it itself at `publishTimeoutMs`);
 * the relay retries it with backoff.
 *
 * @example
 * if (outboxErrors.is(err, "OUTBOX_PAYLOAD_TOO_LARGE")) log.error({ bytes: err.fields.bytes });
 */
import { defineErrors } from "@casebook/kit/errors";

export const outboxErrors = defineErrors({
  OUTBOX_EVENT_INVALID: {
    status: 500,
    message:
      "An outbox event is malformed (see `field`): ordering key and event id 1–255 characters, type like `payment.captured`, payload a JSON object.",
  },
  OUTBOX_PAYLOAD_TOO_LARGE: {
    status: 500,
    message:
      "An outbox event's payload is larger than `maxBytes`; publish a reference (an id) instead of the whole document.",
  },
  OUTBOX_EVENT_DUPLICATE: {
    status: 500,
    message: "An outbox event with this `eventId` already exists; event ids must be unique per event.",
  },
  OUTBOX_PUBLISH_FAILED: {
    status: 502,
    message: "The event consumer refused or did not answer in time; the relay retries it with backoff.",
  },
});

export type OutboxErrorCode = keyof typeof outboxErrors.specs;
