/**
 * What a conversation and a message are, and the rules every entry point applies before
 * anything is stored (CH-24's choices stated as constants). Ids are Snowflakes (`bigint`)
 * inside and decimal strings on the wire: a JS number holds 53 bits, a Snowflake 63.
 *
 * - `direct`: exactly two users, one conversation per pair; strict order by its counter.
 * - `group`: up to MAX_GROUP_MEMBERS members; strict order by its counter (CH-06).
 * - `channel`: up to MAX_CHANNEL_MEMBERS members; no per-message counter on the hot row:
 *   ids are Snowflakes and positions are commit offsets stamped in batches (CH-07/CH-08).
 *
 * @example
 * checkBody("hello");                      // undefined: fine
 * checkBody("x".repeat(200_000));          // "body is 200000 bytes; at most 131072"
 */
import { MAX_CAPTION_CHARS, type MediaRef } from "./media.ts";

export type ChatKind = "direct" | "group" | "channel";
/** A message typed (`text`), or an event that changes an earlier one of the same sender (`edit`, `delete`). */
export type MessageKind = "text" | "edit" | "delete";
export const CHAT_KINDS: readonly ChatKind[] = ["direct", "group", "channel"];

/** CH-24: the largest group whose writes are serialized on one counter row. */
export const MAX_GROUP_MEMBERS = 1_024;
/** CH-20/CH-24: a channel's members (the text's example is 50k). */
export const MAX_CHANNEL_MEMBERS = 100_000;
/** CH-13: a message is at most 128 KB (UTF-8 bytes of its body); frames carry 32 KB of it. */
export const MAX_MESSAGE_BYTES = 128 * 1_024;
/** CH-24: history retention, stated (no deletion job yet: messages are kept). */
export const RETENTION_DAYS = 365;
/** User and device ids: what the issuer signs into a token; short, printable, no separators of ours. */
export const USER_ID_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;
export const CLIENT_MSG_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Unread counts are counted up to this many (a badge shows "999+"): the count is a bounded range scan. */
export const MAX_UNREAD_COUNT = 999;
/** A page of history, at most. */
export const MAX_PAGE_LIMIT = 500;

export interface Conversation {
  readonly id: bigint;
  readonly kind: ChatKind;
  readonly title: string | undefined;
  readonly createdBy: string;
  readonly createdAtMs: number;
  /** The counter (direct, group) or the last commit offset (channel). */
  readonly lastSeq: bigint;
  readonly lastMessageAtMs: number | undefined;
  readonly memberCount: number;
  /**
   * For the viewer: messages of others, not deleted, after the furthest read pointer of the
   * viewer's devices — derived from the pointers, never a second counter (at most
   * MAX_UNREAD_COUNT). Present in the conversation list.
   */
  readonly unread?: number | undefined;
}

export interface Message {
  readonly chatId: bigint;
  /** Snowflake: the identity clients deduplicate by (CH-10). */
  readonly id: bigint;
  /** Position in the conversation, what readers resume after; undefined while a channel row waits for its offset. */
  readonly seq: bigint | undefined;
  readonly clientMsgId: string;
  readonly senderId: string;
  readonly senderDevice: string;
  /** Empty in a tombstone (a deleted message) and in a delete event. */
  readonly body: string;
  readonly createdAtMs: number;
  /** `text` unless this row is an edit or a delete of `targetId`. */
  readonly kind?: MessageKind | undefined;
  readonly targetId?: bigint | undefined;
  /** The last edit of this message; its tombstone's time. */
  readonly editedAtMs?: number | undefined;
  readonly deletedAtMs?: number | undefined;
  /** CH-11: first delivered to / read by a device of someone other than the sender. */
  readonly deliveredAtMs?: number | undefined;
  readonly readAtMs?: number | undefined;
  /** Media by reference (CH-24): the message carries only this; the caption is `body`. */
  readonly media?: MediaRef | undefined;
}

/** The largest member count of a kind. */
export function membersMax(kind: ChatKind): number {
  if (kind === "direct") return 2;
  return kind === "group" ? MAX_GROUP_MEMBERS : MAX_CHANNEL_MEMBERS;
}

/** Why a body cannot be stored, or undefined. With media (CH-24) the body is its caption: it may be empty. */
export function checkBody(body: string, withMedia = false): string | undefined {
  if (body.length === 0) return withMedia ? undefined : "body is empty";
  if (withMedia && body.length > MAX_CAPTION_CHARS)
    return `a caption is at most ${MAX_CAPTION_CHARS} characters`;
  const bytes = Buffer.byteLength(body, "utf8");
  if (bytes > MAX_MESSAGE_BYTES) return `body is ${bytes} bytes; at most ${MAX_MESSAGE_BYTES}`;
  return undefined;
}

/** The key that makes a direct conversation unique per pair, whoever creates it. */
export function directKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/** A wire id (decimal string of a positive 63-bit integer) as a bigint, or undefined. */
export function parseId(text: unknown): bigint | undefined {
  if (typeof text !== "string" || !/^[1-9][0-9]{0,18}$/.test(text)) return undefined;
  const id = BigInt(text);
  return id < 1n << 63n ? id : undefined;
}

/** A wire position: "0" (before the first message) or a positive 63-bit integer. */
export function parseSeq(text: unknown): bigint | undefined {
  if (text === "0") return 0n;
  return parseId(text);
}
