/**
 * What the hit-ratio bench raises. Kept beside the bench until the cache package has its
 * one registry: move the code there when it exists.
 *
 * @example
 * throw hitRatioBenchErrors.create("CACHE_BENCH_ARGS_INVALID", { detail: "--keys: must be >= 100" });
 */
import { defineErrors } from "@casebook/kit/errors";

export const hitRatioBenchErrors = defineErrors({
  CACHE_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run with --help for the flags and their bounds.",
  },
});
