/** The rate limiter's error registry: stable codes, their HTTP status, what to do. */
import { defineErrors } from "@casebook/kit/errors";

export const rateLimitErrors = defineErrors({
  RATELIMIT_EXCEEDED: {
    status: 429,
    message: "Too many requests for this limit; retry after the Retry-After header's seconds.",
  },
  RATELIMIT_UNAVAILABLE: {
    status: 503,
    message:
      "The rate limiter is unavailable and this route fails closed; retry after Retry-After, with backoff.",
  },
  RATELIMIT_OVERLOADED: {
    status: 503,
    message:
      "This rate-limiter instance has too many decisions in flight and shed the check undecided (not a refusal: you are not over your limit); retry after Retry-After.",
  },
  RATELIMIT_COST_TOO_HIGH: {
    status: 400,
    message: "The cost is larger than a policy's bucket: such a request could never pass; lower `cost`.",
  },
  RATELIMIT_POLICY_UNKNOWN: {
    status: 400,
    message:
      "A check named a policy that is not in force; `policies` lists those in force (GET /v1/policies shows them).",
  },
  RATELIMIT_POLICY_INVALID: {
    status: 400,
    message: "The rate-limit policy configuration is invalid; see `issues` for each problem by path.",
  },
});
