/**
 * The socket protocol (CH-13, CH-15): every frame is a JSON object routed by its `action`
 * field, like the managed gateway's `$request.body.action`. A client frame may carry `ref`,
 * echoed on the answer, so a client matches answers to requests.
 *
 * client → gateway
 *   send     {ref, chatId, clientMsgId, body, mediaId?}    → sent {ref, message, created}
 *            (with mediaId: media by reference, CH-24; body is its caption, maybe empty)
 *   part     {clientMsgId, chatId, index, count, data,     a message over 32 KB, in parts (the
 *             messageId?}                                  last completes it, answered as `send`;
 *                                                          with messageId: an edit of it)
 *   edit     {ref, chatId, messageId, clientMsgId, body}   → sent {ref, message: the edit event, created}
 *   delete   {ref, chatId, messageId}                      → sent {ref, message: the delete event, created}
 *   conversations {ref}     yours, with unread counts     → conversations {ref, conversations}
 *   typing   {chatId}       the user is typing (ephemeral) → typing {chatId, userId, deviceId, expiresInMs}
 *                                                          to the other members' live devices
 *   presence {ref, chatId, watch?}  who of the members is online  → presence {ref, chatId, users};
 *            watch: true also pushes presence-changed {users} on every change; false stops
 *            (answered presence {ref, chatId, watching: false}, without users)
 *   sync     {ref, chatId, after, limit?}                  → history {ref, chatId, messages, next}
 *   ack      {chatId, seq}   delivered up to seq (CH-11)   → receipt to the senders
 *   read     {chatId, seq}   displayed up to seq (CH-11)   → receipt to the senders
 *   refresh  {ref, token}    a fresh JWT, same user/device → refreshed {ref, expiresAt}
 *   ping     {ref?}          the app heartbeat (CH-12/13)  → pong {ref}
 * gateway → client
 *   message  {message}  ·  message-part {id, index, count, data}  ·  receipt {...}  ·  typing {...}
 *   presence-changed {users: [{userId, online, devices}]}   a watched member's devices changed
 *   resync   {}         the gateway's routing was cut (its Redis restarted or the link dropped):
 *                       live frames may have been lost — sync every conversation after your cursor
 *   error    {ref?, code, message, field?}   a bad frame, answered, never stored
 *
 * Close codes: 4000 draining (deploy: reconnect with jitter), 4001 token expired, 4002 idle,
 * 4003 maximum lifetime reached, 1008 flooding; all mean "reconnect, then sync after your last seq".
 *
 * @example
 * parseFrame('{"action":"ping","ref":"1"}'); // { ok: true, frame: { action: "ping", ref: "1" } }
 * parseFrame("nope");                        // { ok: false, code: "FRAME_INVALID", detail: "the frame is not JSON" }
 */
import { CLIENT_MSG_ID_PATTERN, MAX_PAGE_LIMIT, parseId, parseSeq } from "./conversation.ts";

export const MAX_FRAME_BYTES = 32 * 1_024;
export const CLOSE_DRAINING = 4000;
export const CLOSE_TOKEN_EXPIRED = 4001;
export const CLOSE_IDLE = 4002;
export const CLOSE_LIFETIME = 4003;
export const CLOSE_FLOOD = 1008;

export type ClientFrame =
  | {
      action: "send";
      ref: string | undefined;
      chatId: bigint;
      clientMsgId: string;
      body: string;
      /** Media by reference (CH-24), uploaded first through POST /v1/media. */
      mediaId: string | undefined;
    }
  | {
      action: "part";
      ref: string | undefined;
      chatId: bigint;
      clientMsgId: string;
      index: number;
      count: number;
      data: string;
      /** Set when the parts carry an edit of this message. */
      messageId: bigint | undefined;
    }
  | {
      action: "edit";
      ref: string | undefined;
      chatId: bigint;
      messageId: bigint;
      clientMsgId: string;
      body: string;
    }
  | { action: "delete"; ref: string | undefined; chatId: bigint; messageId: bigint }
  | { action: "conversations"; ref: string | undefined }
  | { action: "typing"; ref: string | undefined; chatId: bigint }
  | { action: "presence"; ref: string | undefined; chatId: bigint; watch: boolean | undefined }
  | { action: "sync"; ref: string | undefined; chatId: bigint; after: bigint; limit: number }
  | { action: "ack" | "read"; ref: string | undefined; chatId: bigint; seq: bigint }
  | { action: "refresh"; ref: string | undefined; token: string }
  | { action: "ping"; ref: string | undefined };

export type FrameParse =
  | { ok: true; frame: ClientFrame }
  | { ok: false; code: "FRAME_INVALID" | "FRAME_TOO_LARGE"; detail: string; field?: string; ref?: string };

/** Parts of one message at most: 128 KB in 32 KB frames, with room for the JSON around the data. */
export const MAX_PARTS = 8;

function bad(detail: string, field?: string, ref?: string): FrameParse {
  return { ok: false, code: "FRAME_INVALID", detail, ...(field ? { field } : {}), ...(ref ? { ref } : {}) };
}

export function parseFrame(text: string): FrameParse {
  if (Buffer.byteLength(text, "utf8") > MAX_FRAME_BYTES) {
    return { ok: false, code: "FRAME_TOO_LARGE", detail: `a frame is at most ${MAX_FRAME_BYTES} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad("the frame is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return bad("the frame is not a JSON object");
  const f = value as Record<string, unknown>;
  const ref = typeof f.ref === "string" && f.ref.length <= 64 ? f.ref : undefined;
  if (f.ref !== undefined && ref === undefined) return bad("ref is a string of at most 64 characters", "ref");
  const chatId = () => parseId(f.chatId);
  switch (f.action) {
    case "ping":
      return { ok: true, frame: { action: "ping", ref } };
    case "send": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      if (typeof f.clientMsgId !== "string" || !CLIENT_MSG_ID_PATTERN.test(f.clientMsgId))
        return bad("clientMsgId is a UUID", "clientMsgId", ref);
      const mediaId = f.mediaId === undefined ? undefined : parseId(f.mediaId);
      if (f.mediaId !== undefined && mediaId === undefined)
        return bad("mediaId is a decimal id string", "mediaId", ref);
      if (typeof f.body !== "string" || (f.body.length === 0 && mediaId === undefined))
        return bad("body is a non-empty string (it may be empty with a mediaId)", "body", ref);
      return {
        ok: true,
        frame: {
          action: "send",
          ref,
          chatId: id,
          clientMsgId: f.clientMsgId.toLowerCase(),
          body: f.body,
          mediaId: mediaId === undefined ? undefined : String(mediaId),
        },
      };
    }
    case "part": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      if (typeof f.clientMsgId !== "string" || !CLIENT_MSG_ID_PATTERN.test(f.clientMsgId))
        return bad("clientMsgId is a UUID", "clientMsgId", ref);
      const { index, count, data } = f;
      if (!Number.isInteger(count) || (count as number) < 2 || (count as number) > MAX_PARTS)
        return bad(`count is an integer in 2..${MAX_PARTS}`, "count", ref);
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= (count as number))
        return bad("index is an integer in 0..count-1", "index", ref);
      if (typeof data !== "string") return bad("data is a string", "data", ref);
      const messageId = f.messageId === undefined ? undefined : parseId(f.messageId);
      if (f.messageId !== undefined && messageId === undefined)
        return bad("messageId is a decimal id string", "messageId", ref);
      return {
        ok: true,
        frame: {
          action: "part",
          ref,
          chatId: id,
          clientMsgId: f.clientMsgId.toLowerCase(),
          index: index as number,
          count: count as number,
          data,
          messageId,
        },
      };
    }
    case "edit":
    case "delete": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      const messageId = parseId(f.messageId);
      if (messageId === undefined) return bad("messageId is a decimal id string", "messageId", ref);
      if (f.action === "delete") return { ok: true, frame: { action: "delete", ref, chatId: id, messageId } };
      if (typeof f.clientMsgId !== "string" || !CLIENT_MSG_ID_PATTERN.test(f.clientMsgId))
        return bad("clientMsgId is a UUID", "clientMsgId", ref);
      if (typeof f.body !== "string" || f.body.length === 0)
        return bad("body is a non-empty string", "body", ref);
      return {
        ok: true,
        frame: {
          action: "edit",
          ref,
          chatId: id,
          messageId,
          clientMsgId: f.clientMsgId.toLowerCase(),
          body: f.body,
        },
      };
    }
    case "conversations":
      return { ok: true, frame: { action: "conversations", ref } };
    case "typing":
    case "presence": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      if (f.action === "typing") return { ok: true, frame: { action: "typing", ref, chatId: id } };
      if (f.watch !== undefined && typeof f.watch !== "boolean")
        return bad("watch is true (push changes) or false (stop)", "watch", ref);
      return { ok: true, frame: { action: "presence", ref, chatId: id, watch: f.watch } };
    }
    case "sync": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      const after = parseSeq(f.after);
      if (after === undefined)
        return bad('after is a seq: a decimal string, "0" for the beginning', "after", ref);
      const limit = f.limit ?? 100;
      if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_PAGE_LIMIT)
        return bad(`limit is an integer in 1..${MAX_PAGE_LIMIT}`, "limit", ref);
      return { ok: true, frame: { action: "sync", ref, chatId: id, after, limit: limit as number } };
    }
    case "ack":
    case "read": {
      const id = chatId();
      if (id === undefined) return bad("chatId is a decimal id string", "chatId", ref);
      const seq = parseId(f.seq);
      if (seq === undefined) return bad("seq is a positive decimal string", "seq", ref);
      return { ok: true, frame: { action: f.action, ref, chatId: id, seq } };
    }
    case "refresh":
      if (typeof f.token !== "string" || f.token.length === 0 || f.token.length > 2_048)
        return bad("token is a JWT string", "token", ref);
      return { ok: true, frame: { action: "refresh", ref, token: f.token } };
    default:
      return bad(
        typeof f.action === "string"
          ? `unknown action ${JSON.stringify(f.action.slice(0, 40))}`
          : "action is missing",
        "action",
        ref,
      );
  }
}

/**
 * Splits a frame's JSON over MAX_FRAME_BYTES into `message-part` frames (CH-13): the text is
 * cut into slices that each fit, with the JSON around them.
 */
export function splitOutgoing(id: string, json: string, sliceChars = 8_000): string[] {
  if (Buffer.byteLength(json, "utf8") <= MAX_FRAME_BYTES) return [json];
  // 8,000 UTF-16 units are at most 24,000 UTF-8 bytes, JSON escaping of the slice included
  // only for ASCII-heavy text; slices are re-measured and halved when they do not fit.
  const slices: string[] = [];
  for (let at = 0; at < json.length; ) {
    let size = sliceChars;
    let frame: string;
    for (;;) {
      const data = json.slice(at, at + size);
      frame = JSON.stringify({ action: "message-part", id, index: slices.length, count: 0, data });
      if (Buffer.byteLength(frame, "utf8") <= MAX_FRAME_BYTES - 16 || size <= 64) break;
      size = Math.floor(size / 2);
    }
    slices.push(json.slice(at, at + size));
    at += size;
  }
  return slices.map((data, index) =>
    JSON.stringify({ action: "message-part", id, index, count: slices.length, data }),
  );
}
