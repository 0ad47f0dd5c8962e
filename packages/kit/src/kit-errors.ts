/**
 * The error registry of @casebook/kit (one registry per package): the codes the
 * building blocks raise. The HTTP layer maps them to problem+json like any other.
 *
 * @example
 * if (kitErrors.is(error, "BREAKER_OPEN")) reply.header("retry-after", Math.ceil(Number(error.fields.retryAfterMs) / 1000));
 */
import { defineErrors } from "./errors.ts";

export const kitErrors = defineErrors({
  BREAKER_OPEN: {
    status: 503,
    message: "A dependency is failing and its circuit breaker is open; retry after `retryAfterMs`.",
  },
  CONFIG_INVALID: {
    status: 500,
    message: "The configuration is invalid; fix each variable the message names and start again.",
  },
});

export type KitErrorCode = keyof typeof kitErrors.specs;
