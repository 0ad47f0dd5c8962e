/**
 * The port the send path and the sync path need from the durable history (CH-03, CH-05,
 * CH-19): one interface, implemented on PostgreSQL and PGlite by `store/history-store.ts`,
 * and one contract suite runs on both (`test/history-contract.test.ts`).
 *
 * @example
 * const { message, created } = await history.append({ chatId, id: ids.next(), clientMsgId, ... });
 * const missed = await history.after(chatId, lastSeenSeq, 100); // "everything after", in order
 */
import type { ChatKind, Conversation, Message } from "./conversation.ts";
import type { MediaRef } from "./media.ts";
import type { Pointer, Receipt, ReceiptMove } from "./receipts.ts";

export interface NewConversation {
  readonly id: bigint;
  readonly kind: ChatKind;
  readonly title: string | undefined;
  readonly createdBy: string;
  /** Every member, the creator included. */
  readonly members: readonly string[];
  readonly nowMs: number;
}

export interface NewMessage {
  readonly chatId: bigint;
  /** A fresh Snowflake; used only when the message is new. */
  readonly id: bigint;
  readonly clientMsgId: string;
  readonly senderId: string;
  readonly senderDevice: string;
  /** The text; the new text of an edit; empty for a delete. */
  readonly body: string;
  readonly nowMs: number;
  /** Set when this event edits or deletes an earlier message of the same sender. */
  readonly change?: MessageChange | undefined;
  /** Media by reference (CH-24), resolved by the send service: stored with the row. */
  readonly media?: MediaRef | undefined;
}

/** An edit or a delete of `targetId` (a `text` message of the sender, in the same conversation). */
export interface MessageChange {
  readonly kind: "edit" | "delete";
  readonly targetId: bigint;
}

export interface AppendResult {
  readonly message: Message;
  readonly kind: ChatKind;
  /** False when the client_msg_id was already stored: `message` is the first one (CH-09). */
  readonly created: boolean;
  /** The conversation's members, when the write read them already (a batched send): no second query. */
  readonly recipients?: readonly string[];
}

export interface HistoryPort {
  /** A new conversation; a direct one that exists for the pair is returned instead (`created: false`). */
  createConversation(input: NewConversation): Promise<{ conversation: Conversation; created: boolean }>;
  /** Adds members (members already in stay); refused past the kind's maximum. Returns the new count. */
  addMembers(chatId: bigint, actor: string, userIds: readonly string[], nowMs: number): Promise<number>;
  conversation(chatId: bigint, viewer: string): Promise<Conversation>;
  members(chatId: bigint, viewer: string): Promise<string[]>;
  /**
   * Writes the message durably before anything else (CH-03); a resend of a stored
   * client_msg_id returns the first message (CH-09). Direct and group: `seq` is taken from
   * the conversation's counter in the same transaction (CH-06). Channel: `seq` is stamped
   * after commit (`stampChannel`), undefined in the result when the stamp has not run.
   *
   * With `change`: the event row takes its seq the same way, and in the same transaction the
   * target is rewritten (edit: new body; delete: tombstone, earlier edits emptied). Refused
   * with CHAT_MESSAGE_NOT_FOUND (no such text message), CHAT_MESSAGE_NOT_SENDER (someone
   * else's), CHAT_MESSAGE_DELETED (an edit of a tombstone); a delete of a tombstone returns
   * the first delete event (`created: false`): deleting twice is one delete.
   */
  append(input: NewMessage): Promise<AppendResult>;
  /**
   * Gives the channel's committed, unnumbered messages the next commit offsets, at most
   * `maxBatch` of them in id order; returns id → seq of those it numbered. Stamps of one
   * channel serialize on its row, so offsets become visible in increasing order with no gap.
   */
  stampChannel(chatId: bigint, maxBatch: number): Promise<Map<bigint, bigint>>;
  /** The seq of a stored message, when it has one. */
  seqOf(chatId: bigint, id: bigint): Promise<bigint | undefined>;
  /** Messages with seq > afterSeq, ascending, at most `limit` (resume, CH-05/CH-18). */
  after(chatId: bigint, viewer: string, afterSeq: bigint, limit: number): Promise<Message[]>;
  /** Messages with seq < beforeSeq (all when undefined), newest first, at most `limit` (CH-26). */
  before(chatId: bigint, viewer: string, beforeSeq: bigint | undefined, limit: number): Promise<Message[]>;
  /** Every member's user id, for delivery (no viewer check: the send path's own read). */
  recipients(chatId: bigint): Promise<string[]>;
  /**
   * One slice of a channel's member index (CH-20): the members whose user id hashes to
   * `slice` of `slices`, after `afterUserId` in id order, at most `limit`.
   */
  memberSlice(
    chatId: bigint,
    slice: number,
    slices: number,
    afterUserId: string,
    limit: number,
  ): Promise<string[]>;
  /** Conversations of a user, the most recent message first, each with its unread count for that user. */
  conversationsOf(userId: string, limit: number): Promise<Conversation[]>;
  /**
   * Moves the device's pointer forward to `seq` (never back) and stamps the newly covered
   * messages' status (CH-11); undefined when nothing moved. Refused past the last seq.
   */
  receipt(receipt: Receipt): Promise<ReceiptMove | undefined>;
  /** The viewer's pointers in a conversation, one per device (CH-25). */
  pointers(chatId: bigint, viewer: string): Promise<Pointer[]>;
  /** A fresh Snowflake worker id for this process (0..1023). */
  takeNodeId(): Promise<number>;
}
