/**
 * The one error registry of feed: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area.
 * The service base maps them to RFC 9457 problem+json; `test/errors.test.ts` walks every
 * code. Each 4xx names the offending field in `fields.field`.
 *
 * @example
 * throw errors.create("POST_INVALID", { detail: "text: 501 characters, at most 500", fields: { field: "text" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // posts
  POST_INVALID: { status: 400, message: "The post is not valid; `field` names what to fix." },
  POST_NOT_FOUND: { status: 404, message: "No such post by this author (or it was deleted)." },
  // who acts: a key acts only as its own user (the one in the path)
  FEED_FORBIDDEN: {
    status: 403,
    message:
      "This API key belongs to another user: a key acts only as its own user, so use the key of the user in the path (`field`).",
  },
  USER_NOT_FOUND: {
    status: 404,
    message: "No such user; POST /v1/admin/users makes one with its first key.",
  },
  // the social graph
  FOLLOW_INVALID: { status: 400, message: "This follow is not allowed; `field` names what to fix." },
  // feeds
  FEED_CURSOR_INVALID: {
    status: 400,
    message:
      "The cursor is not one this API made; drop it to start from the newest, or use the one a page returned.",
  },
  FEED_QUERY_INVALID: { status: 400, message: "The feed query is not valid; `field` names what to fix." },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
