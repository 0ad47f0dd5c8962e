/**
 * A message as JSON on the wire (the HTTP API and the socket's frames alike): ids and
 * positions as decimal strings, since a Snowflake does not fit a JS number.
 *
 * @example
 * messageJson(message); // { chatId: "42", id: "7311…", seq: "3", clientMsgId, senderId, senderDevice, body, createdAt }
 */
import type { Message } from "./conversation.ts";
import type { MediaRef } from "./media.ts";

export interface MessageJson {
  chatId: string;
  id: string;
  seq: string | null;
  clientMsgId: string;
  senderId: string;
  senderDevice: string;
  body: string;
  createdAt: string;
  deliveredAt: string | null;
  readAt: string | null;
  kind: "text" | "edit" | "delete";
  /** The message an edit or a delete changes; null for text. */
  targetId: string | null;
  editedAt: string | null;
  deletedAt: string | null;
  /** Media by reference (CH-24); null on a text message and on a tombstone. */
  media: MediaRef | null;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function messageJson(message: Message): MessageJson {
  return {
    chatId: String(message.chatId),
    id: String(message.id),
    seq: message.seq === undefined ? null : String(message.seq),
    clientMsgId: message.clientMsgId,
    senderId: message.senderId,
    senderDevice: message.senderDevice,
    body: message.body,
    createdAt: new Date(message.createdAtMs).toISOString(),
    deliveredAt: iso(message.deliveredAtMs),
    readAt: iso(message.readAtMs),
    kind: message.kind ?? "text",
    targetId: message.targetId === undefined ? null : String(message.targetId),
    editedAt: iso(message.editedAtMs),
    deletedAt: iso(message.deletedAtMs),
    media: message.media ?? null,
  };
}
