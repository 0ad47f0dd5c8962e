/**
 * Errors of the stream layer (NATS JetStream and its in-process twin alike), so a system
 * handles one set of codes whichever engine runs underneath.
 *
 * Two codes matter most to a publisher:
 * - `STREAM_UNAVAILABLE`: the request never reached the server (down, refused, closed).
 *   Nothing was stored, so retrying cannot store it twice.
 * - `STREAM_TIMEOUT`: the request was sent and no answer came within its bound. The
 *   message MAY be stored: retry with the same `msgId`, and the duplicate window makes
 *   the retry harmless.
 *
 * @example
 * try {
 *   await stream.publish("metrics.cpu", payload, { msgId });
 * } catch (error) {
 *   if (streamErrors.is(error, "STREAM_TIMEOUT")) return retryWithSameMsgId();
 *   throw error;
 * }
 */
import { defineErrors } from "@casebook/kit/errors";

export const streamErrors = defineErrors({
  STREAM_URL_INVALID: {
    status: 500,
    message: "NATS_URL must look like nats://host:4222; unset it to use the in-process stream.",
  },
  STREAM_UNAVAILABLE: {
    status: 503,
    message: "The stream server is unreachable; the request was not sent. Retry after a short delay.",
  },
  STREAM_TIMEOUT: {
    status: 503,
    message:
      "The stream server did not answer in time; the request may have been applied. Retry with the same msgId.",
  },
  STREAM_CLOSED: {
    status: 503,
    message: "The stream client is closed; open a new one with openStream().",
  },
  STREAM_BACKPRESSURE: {
    status: 503,
    message: "Too many publishes await their acknowledgement (maxPendingPublishes); slow down and retry.",
  },
  STREAM_CONFIG_INVALID: {
    status: 500,
    message: "A stream or consumer setting is invalid; `fields` names the setting at fault.",
  },
  STREAM_SUBJECT_INVALID: {
    status: 400,
    message: "A subject is dot-separated tokens of visible characters; wildcards (* and >) only in filters.",
  },
  STREAM_CONFIG_CONFLICT: {
    status: 409,
    message:
      "The stream or consumer exists with a setting that cannot change (storage, filter, start), or its subjects overlap another stream's; delete it or pick another name.",
  },
  STREAM_NOT_FOUND: {
    status: 404,
    message: "No stream by this name, or none captures this subject; call ensureStream() first.",
  },
  STREAM_CONSUMER_NOT_FOUND: {
    status: 404,
    message: "No consumer by this name on the stream; call ensureConsumer() first.",
  },
  STREAM_LIMIT_REACHED: {
    status: 503,
    message:
      "The stream is full and its discard policy is 'new': the message was refused. Consume faster or raise maxMessages/maxBytes.",
  },
  STREAM_MESSAGE_TOO_LARGE: {
    status: 413,
    message: "The message is larger than the stream's maxMessageBytes; send a smaller one.",
  },
  STREAM_REQUEST_FAILED: {
    status: 500,
    message: "The stream server refused the request; `fields` holds its error code and description.",
  },
});

export type StreamErrorCode = keyof typeof streamErrors.specs;
