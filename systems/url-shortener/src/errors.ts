/**
 * The one error registry of url-shortener: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area.
 * The service base maps them to RFC 9457 problem+json; `test/errors.test.ts` walks every
 * code. A 4xx about one input names it in `fields.field` (`url`, `alias`, `expiresAt`).
 *
 * @example
 * throw errors.create("LINK_INVALID", { detail: "url: no scheme", fields: { field: "url", reason: "no scheme" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // links: what a client sent or asked for
  LINK_INVALID: {
    status: 400,
    message: "A field of the link is not valid; `field` names it and `reason` says what to change.",
  },
  LINK_NOT_FOUND: { status: 404, message: "No link with this domain and code belongs to this workspace." },
  LINK_ALIAS_TAKEN: {
    status: 409,
    message:
      "This alias is taken on this domain; choose another alias (or leave it out for a generated code).",
  },
  LINK_TARGET_BLOCKED: {
    status: 422,
    message: "The target URL was refused by the abuse checks (blocklist or verifier); it was not stored.",
  },
  LINK_CREATE_RATE_LIMITED: {
    status: 429,
    message: "This API key creates links faster than its limit allows; wait `retryAfterS` seconds and retry.",
  },
  LINK_CURSOR_INVALID: {
    status: 400,
    message: "The cursor is not one this API returned; start the listing again.",
  },
  // workspaces (the owners of API keys)
  WORKSPACE_NOT_FOUND: { status: 404, message: "No workspace has this id; create it first." },
  WORKSPACE_EXISTS: { status: 409, message: "A workspace with this id exists already; pick another id." },
  WORKSPACE_INVALID: { status: 400, message: "A field of the workspace is not valid; `field` names it." },
  // codes
  CODE_SPACE_EXHAUSTED: {
    status: 503,
    message: "Every code of the code space has been handed out; an operator must widen the code length.",
  },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
