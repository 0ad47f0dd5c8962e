/**
 * What the rate-limiter benchmark raises. Kept beside the bench until the package
 * has its one registry (src/errors.ts is not the bench's to create; policy.ts does
 * the same for its code): move these codes there when it exists.
 *
 * @example
 * throw benchErrors.create("RATELIMIT_BENCH_ARGS_INVALID", { detail: "--duration-ms: must be ≥ 100" });
 */
import { defineErrors } from "@casebook/kit/errors";

export const benchErrors = defineErrors({
  RATELIMIT_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run with --help for the flags and their bounds.",
  },
  RATELIMIT_BENCH_TOOL_FAILED: {
    status: 500,
    message: "An external bench tool (redis-benchmark) failed; `fields` holds its exit code and output.",
  },
  RATELIMIT_BENCH_DEGRADED: {
    status: 503,
    message:
      "The limiter answered from its fallback (the store failed), so the run does not measure Redis; check the target.",
  },
});
