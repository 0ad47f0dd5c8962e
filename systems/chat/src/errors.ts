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
  CHAT_MESSAGE_INVALID: {
    status: 400,
    message: "The message cannot be stored as sent; the detail names the problem.",
  },
  CHAT_MESSAGE_NOT_FOUND: {
    status: 404,
    message:
      "No message with this id in the conversation that can be edited or deleted (edits and deletes themselves cannot).",
  },
  CHAT_MESSAGE_NOT_SENDER: {
    status: 403,
    message: "Only the message's sender may edit or delete it.",
  },
  CHAT_MESSAGE_DELETED: {
    status: 409,
    message: "The message was deleted; a tombstone cannot be edited.",
  },
  CHAT_FANOUT_CHANNEL: {
    status: 409,
    message:
      "Typing and presence are not fanned out to a channel's members (up to 100,000); they work in direct chats and groups.",
  },
  CHAT_PRESENCE_WATCHES: {
    status: 409,
    message:
      "A socket watches the presence of at most 4 conversations at once; stop one (presence with watch: false) first.",
  },
  CHAT_CURSOR_CONFLICT: {
    status: 400,
    message: "Send either `after` (ascending) or `before` (newest first), not both.",
  },
  CHAT_RECEIPT_INVALID: { status: 400, message: "A receipt's seq is at most the conversation's last seq." },
  CHAT_ID_TAKEN: {
    status: 409,
    message: "The message id repeated one already stored (two processes on one Snowflake node); resend.",
  },
  // media by reference (CH-24): the API's upload and download grants
  CHAT_MEDIA_INVALID: {
    status: 400,
    message: "The upload cannot be authorized as asked; the detail names the field (contentType or bytes).",
  },
  CHAT_MEDIA_NOT_FOUND: {
    status: 404,
    message: "No media with this id that you uploaded or that is in a conversation you are a member of.",
  },
  CHAT_MEDIA_NOT_UPLOADED: {
    status: 409,
    message: "The media's bytes are not in the object store yet; PUT them to the upload URL, then send.",
  },
  CHAT_MEDIA_PENDING_TOO_MANY: {
    status: 429,
    message:
      "Too many uploads authorized and not yet used; upload and send those, or wait for their URLs to expire.",
  },
  // the object store's pre-signed URLs (PUT and GET /v1/objects/{key})
  OBJECT_SIGNATURE_INVALID: {
    status: 403,
    message: "The URL's signature does not match this object and method; ask the API for a new URL.",
  },
  OBJECT_URL_EXPIRED: { status: 403, message: "The pre-signed URL has expired; ask the API for a new one." },
  OBJECT_CONTENT_TYPE_MISMATCH: {
    status: 400,
    message: "The upload's Content-Type differs from the one its URL was signed for; send the signed header.",
  },
  OBJECT_SIZE_MISMATCH: {
    status: 400,
    message: "The body's size differs from the size the URL was signed for; nothing was stored.",
  },
  OBJECT_EXISTS: {
    status: 409,
    message: "Other bytes are already stored under this key; an object is written once.",
  },
  OBJECT_NOT_FOUND: { status: 404, message: "Nothing is stored under this key." },
  // the socket (error frames carry these codes; the HTTP API never answers them)
  FRAME_INVALID: {
    status: 400,
    message: "The frame is not a JSON object with a known `action`; see the README's socket protocol.",
  },
  FRAME_TOO_LARGE: {
    status: 413,
    message: "A frame is at most 32 KB; split a larger message into parts (the client library does).",
  },
  FRAME_RATE_LIMITED: { status: 429, message: "Too many frames from this connection; slow down." },
  BACKEND_UNAVAILABLE: {
    status: 503,
    message: "The send service did not answer in time; resend with the same clientMsgId.",
  },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
