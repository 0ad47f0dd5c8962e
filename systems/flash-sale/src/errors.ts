/**
 * The one error registry of flash-sale: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area.
 * The service base maps them to RFC 9457 problem+json; `test/errors.test.ts` walks every
 * code.
 *
 * @example
 * throw errors.create("SALE_NOT_FOUND", { fields: { saleId } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // sales
  SALE_NOT_FOUND: { status: 404, message: "No sale has this id; check the id in the sale's link." },
  SALE_EXISTS: { status: 409, message: "A sale with this id exists already; pick another id or omit it." },
  SALE_NOT_OPEN: { status: 409, message: "The sale has not opened yet; wait in the queue until opensAt." },
  SALE_SOLD_OUT: {
    status: 409,
    message: "Every ticket is sold or held; tickets held and not paid come back when their holds expire.",
  },
  // holds and orders
  HOLD_NOT_FOUND: { status: 404, message: "No hold has this id; reserve again to get one." },
  HOLD_EXPIRED: {
    status: 409,
    message: "The hold expired (or was lost with the hot store) and its tickets went back; reserve again.",
  },
  HOLD_NOT_PAYABLE: {
    status: 409,
    message: "The hold is being charged, paid or released already; read it with GET /v1/holds/{id}.",
  },
  BUYER_HAS_HOLD: {
    status: 409,
    message: "This buyer holds tickets of this sale already; pay for them or let them expire first.",
  },
  BUYER_OVER_CAP: {
    status: 422,
    message: "The quantity goes above what one buyer may have of this sale; ask for fewer tickets.",
  },
  // the edge (FS-14): best effort, never the inventory barrier
  EDGE_RATE_LIMITED: {
    status: 429,
    message: "Too many requests from this address; wait Retry-After seconds (your place in line is kept).",
  },
  JOIN_CHALLENGE_REQUIRED: {
    status: 400,
    message:
      "Joining needs a solved challenge: POST /v1/sales/{saleId}/challenge, find the nonce, join with both.",
  },
  JOIN_CHALLENGE_INVALID: {
    status: 403,
    message:
      "The challenge is forged, expired, for another user or sale, or its nonce does not solve it; ask a new one.",
  },
  // the waiting room and its admission tokens
  ROOM_FULL: { status: 503, message: "The waiting room is full; try again in a minute." },
  ENTRANT_NOT_FOUND: {
    status: 404,
    message: "This user has not joined this sale's waiting room; join it first.",
  },
  ENTRANT_SECRET_INVALID: {
    status: 403,
    message:
      "The entrant secret does not match the one given at join; send the x-entrant-secret you received.",
  },
  ADMISSION_REQUIRED: {
    status: 401,
    message: "Reserving needs an admission token: wait in the room, then fetch it from the admission route.",
  },
  ADMISSION_INVALID: {
    status: 401,
    message: "The admission token is malformed, forged, expired or signed by a retired key; fetch a new one.",
  },
  ADMISSION_NOT_YOURS: {
    status: 403,
    message:
      "The admission token belongs to another entrant or sale; each entrant uses its own token and secret.",
  },
  ADMISSION_EXPIRED: {
    status: 403,
    message: "Your checkout slot ended (silence past the grace, or the session's end); join the room again.",
  },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
