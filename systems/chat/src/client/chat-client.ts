/**
 * The chat client library (CH-01, CH-10, CH-14), for Node (24's global WebSocket) and the
 * browser alike: it speaks only the public socket protocol (domain/frames.ts) and keeps what
 * makes delivery exactly-once on screen:
 *
 * - a cursor per conversation: the highest seq it holds with nothing missing below it;
 * - reconnect with backoff + jitter (reconnect-schedule.ts) on any close, then "give me
 *   what I missed": `sync` after each cursor, page by page;
 * - dedupe by message id: a message that arrives live and again by sync (at-least-once,
 *   CH-10) is shown once; a live message past a gap triggers a sync instead of being shown
 *   out of order, so `onMessage` sees each conversation strictly in seq order;
 * - an ack (`delivered`) for what it holds, and `markRead` for what the screen showed;
 * - an offline outbox: `send` while disconnected keeps the message with its clientMsgId and
 *   resends it after every reconnect until the service answers; the service's conditional
 *   insert makes the resend of one already stored return the first result (CH-09).
 *
 * Messages over 32 KB go up as `part` frames and come down as `message-part` frames.
 *
 * Edits and deletes are events in the history like messages: `edit` / `delete` go through the
 * same outbox (resent until answered), and every member's `onMessage` sees them in seq order
 * with `kind` "edit" or "delete" and `targetId` — the app applies them to the message it
 * shows. `conversations()` lists yours with unread counts (derived from the read pointers);
 * `typing(chatId)` announces typing (throttled here), `onTyping`/`typers(chatId)` show who
 * types (each indicator expires); `presence(chatId)` asks who of the members is online, and
 * `watchPresence(chatId)` + `onPresence` keep it pushed as members connect and disconnect.
 *
 * @example
 * const client = new ChatClient({ url: "ws://127.0.0.1:8102/v1/socket", token: () => fetchToken() });
 * client.onMessage((m) => render(m));
 * client.watch("42");            // a conversation to keep in sync, from its start (or a saved cursor)
 * client.connect();
 * await client.send("42", "olá"); // resolves with the stored message once the service has it
 */
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { MAX_CAPTION_CHARS, type MediaRef } from "../domain/media.ts";
import { ReconnectSchedule } from "./reconnect-schedule.ts";
import { type TypingHeard, TypingState } from "./typing-state.ts";

export interface ClientMessage {
  chatId: string;
  id: string;
  seq: string;
  clientMsgId: string;
  senderId: string;
  senderDevice: string;
  body: string;
  createdAt: string;
  /** "text", or an event that changes `targetId`: "edit" (body is the new text) or "delete". */
  kind?: "text" | "edit" | "delete";
  targetId?: string | null;
  editedAt?: string | null;
  /** Set on a tombstone (its body is empty). */
  deletedAt?: string | null;
  /** Media by reference (CH-24): GET /v1/media/{id} gives its download URL; `body` is the caption. */
  media?: MediaRef | null;
}

export interface ClientConversation {
  id: string;
  kind: "direct" | "group" | "channel";
  title: string | null;
  lastSeq: string;
  lastMessageAt: string | null;
  memberCount: number;
  /** Others' messages after your furthest read pointer (at most 999). */
  unread: number;
}

export interface ClientPresence {
  userId: string;
  online: boolean;
  devices: string[];
}

export interface ClientReceipt {
  chatId: string;
  userId: string;
  deviceId: string;
  kind: "delivered" | "read";
  upToSeq: string;
}

export interface ChatClientOptions {
  /** The gateway's socket URL (behind the L4 front in production). */
  readonly url: string;
  /** A user token; called again before each reconnect (tokens expire). */
  readonly token: () => string | Promise<string>;
  readonly reconnect?: { baseMs: number; capMs: number };
  readonly random?: RandomSource;
  /** Ack (delivered) every message as it is taken in. Default true. */
  readonly autoAck?: boolean;
  /** The app heartbeat (a `ping` frame) that keeps the gateway's idle timer away (CH-13). Default 60 s. */
  readonly pingEveryMs?: number;
  /** Node: `WebSocket` from `ws` when the global one is missing. Default the global WebSocket. */
  readonly WebSocket?: typeof WebSocket;
}

interface Pending {
  readonly chatId: string;
  /** The outbox key: the clientMsgId, or `delete:<messageId>` for a delete. */
  readonly clientMsgId: string;
  readonly body: string;
  /** Set for an edit or a delete of this message. */
  readonly change?: { kind: "edit" | "delete"; messageId: string };
  /** Media by reference (CH-24), uploaded already (`uploadMedia`). */
  readonly mediaId?: string;
  readonly resolve: (m: ClientMessage) => void;
  readonly reject: (e: Error) => void;
}

/** Message ids remembered per conversation for dedupe; older ones are below the cursor anyway. */
const MAX_SEEN_IDS = 10_000;
const FRAME_CHARS = 8_000;
const SYNC_PAGE = 200;
/** Requests (conversations, presence) awaiting their answer, at most; the next is refused. */
const MAX_REQUESTS = 32;

export class ChatClient {
  readonly #options: ChatClientOptions;
  readonly #schedule: ReconnectSchedule;
  readonly #cursors = new Map<string, bigint>();
  readonly #seen = new Map<string, Set<string>>();
  /** Chats whose sync in flight must be followed by another (a resync arrived meanwhile). */
  readonly #resyncAfter = new Set<string>();
  readonly #outbox = new Map<string, Pending>();
  readonly #parts = new Map<string, string[]>();
  readonly #syncing = new Set<string>();
  readonly #onMessage: ((m: ClientMessage) => void)[] = [];
  readonly #onReceipt: ((r: ClientReceipt) => void)[] = [];
  readonly #onState: ((state: "open" | "closed", code?: number) => void)[] = [];
  readonly #onTyping: ((chatId: string, typers: string[]) => void)[] = [];
  readonly #onPresence: ((users: ClientPresence[]) => void)[] = [];
  /** Conversations whose members' presence is pushed; watched again after every reconnect. */
  readonly #presenceChats = new Set<string>();
  readonly #typing = new TypingState();
  readonly #requests = new Map<
    string,
    { resolve: (f: Record<string, unknown>) => void; reject: (e: Error) => void }
  >();
  #ws: WebSocket | undefined;
  #open = false;
  #stopped = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #ping: ReturnType<typeof setInterval> | undefined;
  #refs = 0;
  #gatewayId: string | undefined;
  /** Reconnect pauses taken, for tests and dashboards. */
  readonly delaysMs: number[] = [];

  constructor(options: ChatClientOptions) {
    this.#options = options;
    const bounds = options.reconnect ?? { baseMs: 250, capMs: 30_000 };
    this.#schedule = new ReconnectSchedule({ ...bounds, random: options.random ?? systemRandom });
  }

  onMessage(cb: (m: ClientMessage) => void): void {
    this.#onMessage.push(cb);
  }

  onReceipt(cb: (r: ClientReceipt) => void): void {
    this.#onReceipt.push(cb);
  }

  onState(cb: (state: "open" | "closed", code?: number) => void): void {
    this.#onState.push(cb);
  }

  /** Someone started (or kept) typing: the conversation's typers now. */
  onTyping(cb: (chatId: string, typers: string[]) => void): void {
    this.#onTyping.push(cb);
  }

  /** Who is typing in the conversation now (expired indicators dropped). */
  typers(chatId: string): string[] {
    return this.#typing.typers(chatId, Date.now());
  }

  /** The user is typing: a frame at most once per 3 s per conversation; ephemeral, lost when offline. */
  typing(chatId: string): void {
    if (this.#open && this.#typing.mayAnnounce(chatId, Date.now())) this.#frame({ action: "typing", chatId });
  }

  /** Your conversations, the most recent message first, each with its unread count. */
  async conversations(): Promise<ClientConversation[]> {
    const answer = await this.#request({ action: "conversations" });
    return answer.conversations as ClientConversation[];
  }

  /** Who of the conversation's members is online (a direct chat or a group). */
  async presence(chatId: string): Promise<ClientPresence[]> {
    const answer = await this.#request({ action: "presence", chatId });
    return answer.users as ClientPresence[];
  }

  /**
   * Keeps the members' presence pushed (CH-16): resolves with it now (empty while not
   * connected), then `onPresence` hears each change; the watch is renewed after every reconnect.
   * At most 4 conversations at once per socket (the gateway refuses a fifth).
   */
  async watchPresence(chatId: string): Promise<ClientPresence[]> {
    this.#presenceChats.add(chatId);
    return this.#open ? this.#watchPresenceNow(chatId) : [];
  }

  /** Stops pushing this conversation's presence. */
  async unwatchPresence(chatId: string): Promise<void> {
    if (!this.#presenceChats.delete(chatId) || !this.#open) return;
    await this.#request({ action: "presence", chatId, watch: false });
  }

  /** Members' presence as read on a watch, and each change of a watched member after it. */
  onPresence(cb: (users: ClientPresence[]) => void): void {
    this.#onPresence.push(cb);
  }

  async #watchPresenceNow(chatId: string): Promise<ClientPresence[]> {
    const answer = await this.#request({ action: "presence", chatId, watch: true });
    const users = answer.users as ClientPresence[];
    for (const cb of this.#onPresence) cb(users);
    return users;
  }

  /** Edits your message: resolves with the stored edit event (resent until answered, like a send). */
  edit(chatId: string, messageId: string, body: string, clientMsgId: string = crypto.randomUUID()) {
    return this.#enqueue({ chatId, clientMsgId, body, change: { kind: "edit", messageId } });
  }

  /** Deletes your message: resolves with the delete event (the first one, if it was deleted already). */
  delete(chatId: string, messageId: string): Promise<ClientMessage> {
    return this.#enqueue({
      chatId,
      clientMsgId: `delete:${messageId}`,
      body: "",
      change: { kind: "delete", messageId },
    });
  }

  #request(frame: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!this.#open) return Promise.reject(new Error("not connected"));
    if (this.#requests.size >= MAX_REQUESTS) return Promise.reject(new Error("too many requests in flight"));
    const ref = `req:${++this.#refs}`;
    return new Promise((resolve, reject) => {
      this.#requests.set(ref, { resolve, reject });
      this.#frame({ ...frame, ref });
    });
  }

  /** Keeps a conversation in sync from `afterSeq` (a cursor saved earlier, or "0"). */
  watch(chatId: string, afterSeq = "0"): void {
    if (!this.#cursors.has(chatId)) this.#cursors.set(chatId, BigInt(afterSeq));
    if (this.#open) this.#sync(chatId);
  }

  /** The highest seq held with nothing missing below it. */
  cursor(chatId: string): string {
    return String(this.#cursors.get(chatId) ?? 0n);
  }

  get connected(): boolean {
    return this.#open;
  }

  /** The gateway of the current connection (from its welcome frame). */
  get gatewayId(): string | undefined {
    return this.#gatewayId;
  }

  get outboxSize(): number {
    return this.#outbox.size;
  }

  connect(): void {
    this.#stopped = false;
    void this.#dial();
  }

  close(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#ping);
    this.#ws?.close();
  }

  /** Sends (or queues, when offline) a message; resolves with the stored message. */
  send(chatId: string, body: string, clientMsgId: string = crypto.randomUUID()): Promise<ClientMessage> {
    return this.#enqueue({ chatId, clientMsgId, body });
  }

  /**
   * Sends (or queues) a message carrying media by reference (CH-24): `mediaId` from
   * `uploadMedia` (client/media-upload.ts), `caption` its text (may be empty, one frame at most).
   */
  sendMedia(
    chatId: string,
    mediaId: string,
    caption = "",
    clientMsgId: string = crypto.randomUUID(),
  ): Promise<ClientMessage> {
    if (caption.length > MAX_CAPTION_CHARS)
      return Promise.reject(new RangeError(`a caption is at most ${MAX_CAPTION_CHARS} characters`));
    return this.#enqueue({ chatId, clientMsgId, body: caption, mediaId });
  }

  #enqueue(item: Omit<Pending, "resolve" | "reject">): Promise<ClientMessage> {
    return new Promise((resolve, reject) => {
      const pending = { ...item, resolve, reject };
      this.#outbox.set(item.clientMsgId, pending);
      if (this.#open) this.#transmit(pending);
    });
  }

  markRead(chatId: string, seq: string): void {
    this.#frame({ action: "read", chatId, seq });
  }

  async #dial(): Promise<void> {
    if (this.#stopped) return;
    const Ws = this.#options.WebSocket ?? globalThis.WebSocket;
    let token: string;
    try {
      token = await this.#options.token();
    } catch {
      this.#retry();
      return;
    }
    const url = new URL(this.#options.url);
    url.searchParams.set("token", token);
    const ws = new Ws(url.toString());
    this.#ws = ws;
    ws.onmessage = (event) => this.#onFrame(String(event.data));
    ws.onclose = (event) => {
      if (this.#ws !== ws) return;
      this.#open = false;
      clearInterval(this.#ping);
      // Answers that were in flight on this socket never come: the next welcome starts over.
      this.#syncing.clear();
      this.#resyncAfter.clear();
      this.#parts.clear();
      for (const request of this.#requests.values()) request.reject(new Error("disconnected"));
      this.#requests.clear();
      for (const cb of this.#onState) cb("closed", event.code);
      this.#retry();
    };
    ws.onerror = () => {};
  }

  #retry(): void {
    if (this.#stopped) return;
    const delayMs = this.#schedule.nextDelayMs();
    this.delaysMs.push(delayMs);
    this.#timer = setTimeout(() => void this.#dial(), delayMs);
  }

  #frame(frame: Record<string, unknown>): void {
    if (this.#open && this.#ws) this.#ws.send(JSON.stringify(frame));
  }

  #transmit(p: Pending): void {
    const ref = `send:${p.clientMsgId}`;
    if (p.change?.kind === "delete") {
      this.#frame({ action: "delete", ref, chatId: p.chatId, messageId: p.change.messageId });
      return;
    }
    if (p.change && p.body.length <= FRAME_CHARS) {
      const { messageId } = p.change;
      this.#frame({
        action: "edit",
        ref,
        chatId: p.chatId,
        messageId,
        clientMsgId: p.clientMsgId,
        body: p.body,
      });
      return;
    }
    if (p.body.length <= FRAME_CHARS) {
      this.#frame({
        action: "send",
        ref: `send:${p.clientMsgId}`,
        chatId: p.chatId,
        clientMsgId: p.clientMsgId,
        body: p.body,
        ...(p.mediaId === undefined ? {} : { mediaId: p.mediaId }),
      });
      return;
    }
    const count = Math.ceil(p.body.length / FRAME_CHARS);
    for (let index = 0; index < count; index++) {
      const data = p.body.slice(index * FRAME_CHARS, (index + 1) * FRAME_CHARS);
      this.#frame({
        action: "part",
        ref: `send:${p.clientMsgId}`,
        chatId: p.chatId,
        clientMsgId: p.clientMsgId,
        index,
        count,
        data,
        ...(p.change ? { messageId: p.change.messageId } : {}),
      });
    }
  }

  #onFrame(text: string): void {
    const frame = JSON.parse(text) as Record<string, unknown>;
    switch (frame.action) {
      case "welcome":
        this.#gatewayId = frame.gatewayId as string;
        this.#welcomed();
        return;
      case "message":
        this.#take(frame.message as ClientMessage, true);
        return;
      case "resync":
        // The gateway's routing was cut (its Redis restarted): live frames may be missing.
        for (const chatId of this.#cursors.keys()) this.#sync(chatId, true);
        return;
      case "message-part":
        this.#part(frame);
        return;
      case "history":
        this.#history(frame);
        return;
      case "sent":
        this.#sent(frame);
        return;
      case "receipt":
        for (const cb of this.#onReceipt) cb(frame as unknown as ClientReceipt);
        return;
      case "error":
        this.#failed(frame);
        return;
      case "typing":
        this.#typing.heard(frame as unknown as TypingHeard, Date.now());
        for (const cb of this.#onTyping) cb(frame.chatId as string, this.typers(frame.chatId as string));
        return;
      case "presence-changed":
        for (const cb of this.#onPresence) cb(frame.users as ClientPresence[]);
        return;
      case "conversations":
      case "presence": {
        const request = this.#requests.get(frame.ref as string);
        this.#requests.delete(frame.ref as string);
        request?.resolve(frame);
        return;
      }
    }
  }

  #welcomed(): void {
    this.#open = true;
    this.#schedule.reset();
    for (const cb of this.#onState) cb("open");
    clearInterval(this.#ping);
    this.#ping = setInterval(() => this.#frame({ action: "ping" }), this.#options.pingEveryMs ?? 60_000);
    for (const chatId of this.#cursors.keys()) this.#sync(chatId);
    for (const chatId of this.#presenceChats) this.#watchPresenceNow(chatId).catch(() => {});
    for (const pending of this.#outbox.values()) this.#transmit(pending);
  }

  /**
   * Asks for everything after the cursor. A sync already in flight is not doubled; with
   * `again` (a resync) it is followed by one more, since its answer may predate the gap.
   */
  #sync(chatId: string, again = false): void {
    if (this.#syncing.has(chatId)) {
      if (again) this.#resyncAfter.add(chatId);
      return;
    }
    this.#syncing.add(chatId);
    this.#frame({
      action: "sync",
      ref: `sync:${chatId}:${++this.#refs}`,
      chatId,
      after: this.cursor(chatId),
      limit: SYNC_PAGE,
    });
  }

  #history(frame: Record<string, unknown>): void {
    const chatId = frame.chatId as string;
    this.#syncing.delete(chatId);
    for (const m of frame.messages as ClientMessage[]) this.#take(m, false);
    if (frame.next !== null || this.#resyncAfter.delete(chatId)) this.#sync(chatId);
  }

  #part(frame: Record<string, unknown>): void {
    const id = frame.id as string;
    const parts = this.#parts.get(id) ?? [];
    parts[frame.index as number] = frame.data as string;
    this.#parts.set(id, parts);
    if (parts.filter((p) => p !== undefined).length < (frame.count as number)) return;
    this.#parts.delete(id);
    this.#onFrame(parts.join(""));
  }

  /** Shows a message once, in seq order; a gap below it means a sync, not a jump. */
  #take(m: ClientMessage, live: boolean): void {
    const cursor = this.#cursors.get(m.chatId);
    if (cursor === undefined) {
      if (!live) return;
      this.#cursors.set(m.chatId, 0n); // a new conversation: take it from its start
      this.#sync(m.chatId);
      return;
    }
    const seq = BigInt(m.seq);
    const seen = this.#seen.get(m.chatId) ?? new Set<string>();
    this.#seen.set(m.chatId, seen);
    if (seq <= cursor || seen.has(m.id)) return; // CH-10: a duplicate delivery, shown once
    if (seq > cursor + 1n) {
      this.#sync(m.chatId);
      return;
    } // a gap: fetch in order instead
    seen.add(m.id);
    if (seen.size > MAX_SEEN_IDS) seen.delete(seen.values().next().value!);
    this.#cursors.set(m.chatId, seq);
    this.#typing.messageFrom(m.chatId, m.senderId);
    for (const cb of this.#onMessage) cb(m);
    if (this.#options.autoAck !== false) this.#frame({ action: "ack", chatId: m.chatId, seq: m.seq });
  }

  #sent(frame: Record<string, unknown>): void {
    const message = frame.message as ClientMessage;
    // By ref: a delete's outbox key is not the clientMsgId the service gave its event.
    const ref =
      typeof frame.ref === "string" && frame.ref.startsWith("send:") ? frame.ref.slice(5) : undefined;
    const key = ref ?? message.clientMsgId;
    const pending = this.#outbox.get(key);
    if (!pending) return;
    this.#outbox.delete(key);
    pending.resolve(message);
  }

  #failed(frame: Record<string, unknown>): void {
    const ref = typeof frame.ref === "string" ? frame.ref : "";
    const request = this.#requests.get(ref);
    if (request) {
      this.#requests.delete(ref);
      request.reject(new Error(`${String(frame.code)}: ${String(frame.message)}`));
      return;
    }
    const transient = frame.code === "BACKEND_UNAVAILABLE" || frame.code === "FRAME_RATE_LIMITED";
    if (ref.startsWith("sync:")) {
      const chatId = ref.split(":")[1]!;
      this.#syncing.delete(chatId);
      if (transient) this.#later(() => this.#sync(chatId));
      return;
    }
    if (!ref.startsWith("send:")) return;
    const pending = this.#outbox.get(ref.slice(5));
    if (!pending) return;
    // The send service is restarting or the socket is busy: the same clientMsgId again, later.
    if (transient) {
      this.#later(() => {
        if (this.#outbox.has(pending.clientMsgId)) this.#transmit(pending);
      });
      return;
    }
    this.#outbox.delete(pending.clientMsgId);
    pending.reject(new Error(`${String(frame.code)}: ${String(frame.message)}`));
  }

  /** A retry on the open socket after a short jittered pause (a reconnect resends everything anyway). */
  #later(fn: () => void): void {
    const random = this.#options.random ?? systemRandom;
    const timer = setTimeout(
      () => {
        if (this.#open) fn();
      },
      100 + random.next() * 400,
    );
    (timer as { unref?: () => void }).unref?.();
  }
}

export { downloadMedia, MediaRequestError, type UploadedMedia, uploadMedia } from "./media-upload.ts";
