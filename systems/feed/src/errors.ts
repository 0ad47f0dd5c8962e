/**
 * The one error registry of feed: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area.
 * The service base maps them to RFC 9457 problem+json; `test/errors.test.ts` walks every
 * code. New areas get a comment line of their own, as below.
 *
 * @example
 * throw errors.create("BENCH_ARGS_INVALID", { detail: "--rate-per-s 0: must be at least 1", fields: { flag: "rate-per-s" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
