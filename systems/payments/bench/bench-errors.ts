/**
 * What the payments benchmark raises. Kept beside the bench until the package has its
 * one registry (the lead merges the per-area files): move these codes there then.
 *
 * @example
 * throw benchErrors.create("PAYMENTS_BENCH_ARGS_INVALID", { detail: "--clients: 0 is below 1" });
 */
import { defineErrors } from "@casebook/kit/errors";

export const benchErrors = defineErrors({
  PAYMENTS_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run with --help for the flags and their bounds.",
  },
  PAYMENTS_BENCH_TOOL_FAILED: {
    status: 500,
    message: "pgbench failed or printed no result; `fields` holds its exit code and output.",
  },
  PAYMENTS_BENCH_TOOL_MISSING: {
    status: 500,
    message: "pgbench is not installed; install postgresql-client (apt-get install -y postgresql-client).",
  },
});
