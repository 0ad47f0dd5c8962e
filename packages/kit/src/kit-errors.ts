/**
 * The error registry of @casebook/kit (one registry per package): the codes the
 * building blocks raise. The HTTP layer maps them to problem+json like any other.
 *
 * @example
 * if (kitErrors.is(error, "BREAKER_OPEN")) reply.header("retry-after", Math.ceil(Number(error.fields.retryAfterMs) / 1000));
 */
import { defineErrors } from "./errors.ts";

export const kitErrors = defineErrors({
  ASSERTION_FAILED: {
    status: 500,
    message: "An internal invariant broke: this is a bug; report it with the request id from the logs.",
  },
  BREAKER_OPEN: {
    status: 503,
    message: "A dependency is failing and its circuit breaker is open; retry after `retryAfterMs`.",
  },
  CONFIG_INVALID: {
    status: 500,
    message: "The configuration is invalid; fix each variable the message names and start again.",
  },
  SCHEDULER_QUEUE_FULL: {
    status: 503,
    message:
      "The scheduler's queue bound (`scope`, `limit`) is reached; keep the work in durable storage and offer it again later.",
  },
  GROUP_COMMIT_QUEUE_FULL: {
    status: 503,
    message:
      "Too many items wait for the group commit (`limit`); slow down and retry after the pending batches are written.",
  },
  SNOWFLAKE_CLOCK_BACKWARDS: {
    status: 503,
    message: "The clock went back `behindMs` ms; no id is issued until it passes the last id's time again.",
  },
  SNOWFLAKE_CLOCK_STALLED: {
    status: 503,
    message: "This worker issued every id of one millisecond and its clock did not move on; retry shortly.",
  },
  TOKEN_MALFORMED: {
    status: 401,
    message: "The token is not a well-formed signed token; send the token exactly as it was issued.",
  },
  TOKEN_UNKNOWN_KID: {
    status: 401,
    message: "The token was signed with a key that is no longer (or never was) accepted; get a new token.",
  },
  TOKEN_BAD_SIGNATURE: {
    status: 401,
    message: "The token's signature does not match its contents; get a new token.",
  },
  TOKEN_EXPIRED: {
    status: 401,
    message: "The token expired at `expiresAtMs`; get a new token.",
  },
});

export type KitErrorCode = keyof typeof kitErrors.specs;
