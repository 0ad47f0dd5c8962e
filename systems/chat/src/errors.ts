/**
 * The one error registry of chat: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with (the socket's error frames carry the same codes) and a message that
 * tells the reader what to do, grouped by area. The service base maps them to RFC 9457
 * problem+json; `test/errors.test.ts` walks every code.
 *
 * @example
 * throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: "42" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // conversations and messages
  CHAT_NOT_FOUND: {
    status: 404,
    message: "No conversation with this id that you are a member of; list yours at GET /v1/conversations.",
  },
  CHAT_MEMBERS_TOO_MANY: {
    status: 409,
    message: "The conversation would exceed its kind's member limit; a channel holds more than a group.",
  },
  CHAT_DIRECT_MEMBERS: {
    status: 400,
    message: "A direct conversation has exactly two different members: you and one other user.",
  },
  CHAT_DIRECT_FIXED: {
    status: 409,
    message: "A direct conversation's members cannot change; create a group.",
  },
  CHAT_ID_TAKEN: {
    status: 409,
    message: "The message id repeated one already stored (two processes on one Snowflake node); resend.",
  },
  // authentication
  AUTH_TOKEN_MISSING: {
    status: 401,
    message: "Send a user token: Authorization: Bearer <jwt> (POST /v1/tokens issues one).",
  },
  AUTH_TOKEN_INVALID: {
    status: 401,
    message: "The user token is not valid or has expired; get a fresh one from POST /v1/tokens.",
  },
  AUTH_ISSUER_KEY_INVALID: {
    status: 401,
    message: "POST /v1/tokens needs the issuer's API key: Authorization: Bearer chk_…",
  },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
