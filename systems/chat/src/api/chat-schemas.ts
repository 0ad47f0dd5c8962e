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

export const sendBody = {
  type: "object",
  required: ["clientMsgId", "body"],
  additionalProperties: false,
  properties: {
    clientMsgId: { type: "string", format: "uuid" },
    body: { type: "string", minLength: 1, maxLength: 131_072 },
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
  },
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
