/**
 * What the webhooks benchmark raises. Kept beside the bench until the system has its one
 * registry (the lead merges the per-area files): move these codes there then.
 *
 * @example
 * throw benchErrors.create("WEBHOOKS_BENCH_ARGS_INVALID", { detail: "--workers: 0 is below 1" });
 */
import { defineErrors } from "@casebook/kit/errors";

export const benchErrors = defineErrors({
  WEBHOOKS_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run with --help for the flags and their bounds.",
  },
  WEBHOOKS_BENCH_INCOMPLETE: {
    status: 500,
    message:
      "The bench run did not deliver everything it queued within its bound (`fields` says how many arrived); it reports no speed for a run that lost work.",
  },
});
