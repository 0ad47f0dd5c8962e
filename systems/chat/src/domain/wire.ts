/**
 * A message as JSON on the wire (the HTTP API and the socket's frames alike): ids and
 * positions as decimal strings, since a Snowflake does not fit a JS number.
 *
 * @example
 * messageJson(message); // { chatId: "42", id: "7311…", seq: "3", clientMsgId, senderId, senderDevice, body, createdAt }
 */
import type { Message } from "./conversation.ts";

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
}

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
    deliveredAt: message.deliveredAtMs === undefined ? null : new Date(message.deliveredAtMs).toISOString(),
    readAt: message.readAtMs === undefined ? null : new Date(message.readAtMs).toISOString(),
  };
}
