/**
 * JSON schemas of the chat API: what ajv refuses before a handler runs (400 REQUEST_INVALID
 * naming `/body/<field>`), and what /openapi.json shows.
 */
import { CHAT_KINDS, MAX_GROUP_MEMBERS, MAX_PAGE_LIMIT } from "../domain/conversation.ts";
import { MAX_TOKEN_TTL_S } from "./user-tokens.ts";

const userId = { type: "string", pattern: "^[A-Za-z0-9_.@-]{1,64}$" } as const;
export const decimalId = { type: "string", pattern: "^[1-9][0-9]{0,18}$" } as const;
const position = { type: "string", pattern: "^(0|[1-9][0-9]{0,18})$" } as const;
const instant = { type: "string", format: "date-time" } as const;

export const tokenBody = {
  type: "object",
  required: ["userId", "deviceId"],
  additionalProperties: false,
  properties: {
    userId,
    deviceId: userId,
    ttlS: { type: "integer", minimum: 60, maximum: MAX_TOKEN_TTL_S, default: 3_600 },
  },
} as const;

export const tokenView = {
  type: "object",
  required: ["token", "expiresAt"],
  properties: { token: { type: "string" }, expiresAt: instant },
} as const;

export const conversationView = {
  type: "object",
  required: ["id", "kind", "title", "createdBy", "createdAt", "lastSeq", "lastMessageAt", "memberCount"],
  properties: {
    id: decimalId,
    kind: { type: "string", enum: [...CHAT_KINDS] },
    title: { type: ["string", "null"] },
    createdBy: { type: "string" },
    createdAt: instant,
    lastSeq: position,
    lastMessageAt: { type: ["string", "null"], format: "date-time" },
    memberCount: { type: "integer" },
    /** In the list: the caller's unread messages (others', not deleted, after the furthest read pointer), at most 999. */
    unread: { type: "integer", minimum: 0 },
  },
} as const;

export const createConversationBody = {
  type: "object",
  required: ["kind", "members"],
  additionalProperties: false,
  properties: {
    kind: { type: "string", enum: [...CHAT_KINDS] },
    title: { type: "string", minLength: 1, maxLength: 200 },
    /** The others: the caller is always a member. A channel grows later by POST …/members. */
    members: { type: "array", minItems: 1, maxItems: MAX_GROUP_MEMBERS, uniqueItems: true, items: userId },
  },
} as const;

export const membersBody = {
  type: "object",
  required: ["members"],
  additionalProperties: false,
  properties: { members: { type: "array", minItems: 1, maxItems: 1_000, uniqueItems: true, items: userId } },
} as const;

export const chatParams = {
  type: "object",
  required: ["chatId"],
  additionalProperties: false,
  properties: { chatId: decimalId },
} as const;

export const messageParams = {
  type: "object",
  required: ["chatId", "messageId"],
  additionalProperties: false,
  properties: { chatId: decimalId, messageId: decimalId },
} as const;

/** An edit: the new text, with its own clientMsgId (a resend returns the first edit event). */
export const editBody = {
  type: "object",
  required: ["clientMsgId", "body"],
  additionalProperties: false,
  properties: {
    clientMsgId: { type: "string", format: "uuid" },
    body: { type: "string", minLength: 1, maxLength: 131_072 },
  },
} as const;

/** A message: its text, or media by reference (CH-24) with the text as a caption, maybe empty. */
export const sendBody = {
  type: "object",
  required: ["clientMsgId", "body"],
  additionalProperties: false,
  properties: {
    clientMsgId: { type: "string", format: "uuid" },
    body: { type: "string", maxLength: 131_072 },
    mediaId: decimalId,
  },
} as const;

export const messageView = {
  type: "object",
  required: ["chatId", "id", "seq", "clientMsgId", "senderId", "senderDevice", "body", "createdAt"],
  properties: {
    chatId: decimalId,
    id: decimalId,
    seq: { type: ["string", "null"] },
    clientMsgId: { type: "string" },
    senderId: { type: "string" },
    senderDevice: { type: "string" },
    body: { type: "string" },
    createdAt: instant,
    deliveredAt: { type: ["string", "null"], format: "date-time" },
    readAt: { type: ["string", "null"], format: "date-time" },
    kind: { type: "string", enum: ["text", "edit", "delete"] },
    /** The message an edit or a delete changes. */
    targetId: { type: ["string", "null"] },
    editedAt: { type: ["string", "null"], format: "date-time" },
    /** Set on a tombstone: the body is empty. */
    deletedAt: { type: ["string", "null"], format: "date-time" },
    /** Media by reference (CH-24): fetch it with GET /v1/media/{id}; null on text and on a tombstone. */
    media: {
      type: ["object", "null"],
      required: ["id", "contentType", "bytes", "sha256"],
      properties: {
        id: decimalId,
        contentType: { type: "string" },
        bytes: { type: "integer" },
        sha256: { type: "string" },
      },
    },
  },
} as const;

export const mediaUploadBody = {
  type: "object",
  required: ["contentType", "bytes"],
  additionalProperties: false,
  properties: {
    /** A lower-case image/, video/, audio/, application/ or text/ MIME type, no parameters. */
    contentType: { type: "string", minLength: 3, maxLength: 160 },
    /** The exact size of the bytes to upload; the URL admits that many and no other. */
    bytes: { type: "integer", minimum: 1 },
  },
} as const;

export const mediaParams = {
  type: "object",
  required: ["mediaId"],
  additionalProperties: false,
  properties: { mediaId: decimalId },
} as const;

const signedRequest = {
  type: "object",
  required: ["method", "url", "headers", "expiresAt"],
  properties: {
    method: { type: "string", enum: ["PUT", "GET"] },
    url: { type: "string" },
    /** Send these headers with the request: the upload's type and size were signed. */
    headers: { type: "object", additionalProperties: { type: "string" } },
    expiresAt: instant,
  },
} as const;

const mediaView = {
  type: "object",
  required: ["id", "contentType", "bytes", "sha256", "status"],
  properties: {
    id: decimalId,
    contentType: { type: "string" },
    bytes: { type: "integer" },
    /** Hex SHA-256 of the stored bytes; null while pending. */
    sha256: { type: ["string", "null"] },
    status: { type: "string", enum: ["pending", "stored"] },
  },
} as const;

export const mediaUploadView = {
  type: "object",
  required: ["media", "upload"],
  properties: { media: mediaView, upload: signedRequest },
} as const;

export const mediaDownloadView = {
  type: "object",
  required: ["media", "download"],
  properties: { media: mediaView, download: signedRequest },
} as const;

export const receiptBody = {
  type: "object",
  required: ["kind", "seq"],
  additionalProperties: false,
  properties: { kind: { type: "string", enum: ["delivered", "read"] }, seq: decimalId },
} as const;

export const pointersView = {
  type: "object",
  required: ["pointers"],
  properties: {
    pointers: {
      type: "array",
      items: {
        type: "object",
        required: ["deviceId", "deliveredSeq", "readSeq"],
        properties: { deviceId: { type: "string" }, deliveredSeq: position, readSeq: position },
      },
    },
  },
} as const;

export const sentView = {
  type: "object",
  required: ["message", "created"],
  properties: { message: messageView, created: { type: "boolean" } },
} as const;

export const historyQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    after: position,
    before: decimalId,
    limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: 100 },
  },
} as const;

export const historyPage = {
  type: "object",
  required: ["messages", "order", "next"],
  properties: {
    messages: { type: "array", items: messageView },
    order: { type: "string", enum: ["ascending", "newest-first"] },
    /** The cursor for the next page (`after` or `before`), null at the end. */
    next: { type: ["string", "null"] },
  },
} as const;

export const listQuery = {
  type: "object",
  additionalProperties: false,
  properties: { limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: 100 } },
} as const;
