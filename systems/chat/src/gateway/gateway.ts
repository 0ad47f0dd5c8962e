/**
 * A WebSocket gateway (CH-04, CH-12, CH-13, CH-15, CH-16, CH-27): holds sockets, and only
 * that. Everything durable happens in the send service, reached over HTTP with the user's
 * own token (backend-client.ts), so the backend can be deployed under live sockets.
 *
 * - Connect (CH-15): the upgrade carries a JWT (`Authorization: Bearer`, or `?token=` for
 *   browsers, which cannot set headers on a WebSocket); it is verified before the upgrade
 *   (401 otherwise), new connections are rate limited (CH-13: 500/s by default, 503 past
 *   it), and the connect hook writes the session row with a TTL.
 * - Heartbeat (CH-12): a WebSocket ping every `heartbeatMs` (the sockets in HEARTBEAT_SLICES
 *   slices, one slice at a time); no pong by the next tick and the
 *   socket is terminated — the silent death of a tunnel or a NAT. Each live tick renews the
 *   session row. Idle (no app frame for `idleMs`, CH-13: 10 min; the client's `ping` frame
 *   prevents it) and maximum lifetime (2 h) close with 4002 / 4003.
 * - Frames (CH-13): JSON routed by `action` (domain/frames.ts); over 32 KB is an error frame
 *   (over 64 KB the socket closes with 1009); a message over 32 KB arrives as `part` frames
 *   and leaves as `message-part` frames; a per-connection token bucket answers a flood with
 *   FRAME_RATE_LIMITED, and a connection that keeps flooding is closed with 1008.
 * - Disconnect (CH-16): removes the row, best effort; the TTL covers a gateway that dies.
 * - Drain (CH-27): stop accepting, then close every socket with 4000 spread over `drainMs`,
 *   so clients reconnect (with their own jitter) to the other gateways, not in one herd.
 *
 * @example
 * const gateway = new Gateway({ gatewayId, tokens, backend, sessions, routing, clock, limits, log });
 * await gateway.start();
 * gateway.attach(service.app.server);
 * await gateway.drain(); // on SIGTERM
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { TokenBucket } from "@casebook/kit/token-bucket";
import { type WebSocket, WebSocketServer } from "ws";
import type { UserIdentity, UserTokens } from "../api/user-tokens.ts";
import {
  CLOSE_DRAINING,
  CLOSE_FLOOD,
  CLOSE_IDLE,
  CLOSE_LIFETIME,
  CLOSE_TOKEN_EXPIRED,
  type ClientFrame,
  MAX_FRAME_BYTES,
  parseFrame,
  splitOutgoing,
} from "../domain/frames.ts";
import type { PresenceBus } from "../domain/presence.ts";
import type { RoutedEnvelope, RoutingBus } from "../domain/routing.ts";
import type { SessionTable } from "../domain/sessions.ts";
import { TypingThrottle } from "../domain/typing.ts";
import type { BackendClient } from "./backend-client.ts";
import { ConnectPacer } from "./connect-pacer.ts";
import { DeliveryQueue } from "./delivery-queue.ts";
import { PartAssembler } from "./part-assembler.ts";
import { PresenceWatch } from "./presence-watch.ts";
import { textFrames } from "./text-frames.ts";

export interface GatewayLimits {
  readonly heartbeatMs: number;
  readonly idleMs: number;
  readonly lifetimeMs: number;
  /** Session rows live this long past their last renewal (a few heartbeats). */
  readonly sessionTtlMs: number;
  readonly connectRatePerS: number;
  /** Past the burst, an upgrade waits for its slot at most this long, then gets 503 (0: at once). */
  readonly connectMaxWaitMs: number;
  readonly framesPerS: number;
  readonly frameBurst: number;
  /** Error frames in a row for flooding before the socket is closed with 1008. */
  readonly floodStrikesMax: number;
  readonly drainMs: number;
}

export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = {
  heartbeatMs: 30_000,
  idleMs: 10 * 60_000,
  lifetimeMs: 2 * 3_600_000,
  sessionTtlMs: 90_000,
  connectRatePerS: 500,
  connectMaxWaitMs: 2_000,
  framesPerS: 50,
  frameBurst: 100,
  floodStrikesMax: 20,
  drainMs: 5_000,
};

export interface GatewayLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface GatewayMetrics {
  onConnections(count: number): void;
  onFrameError(code: string): void;
  /** `count` connections got the frame of a message created at `createdAt`. */
  onDelivered(createdAt: string | undefined, count: number): void;
}

export interface GatewayOptions {
  readonly gatewayId: string;
  readonly tokens: UserTokens;
  readonly backend: Pick<
    BackendClient,
    "send" | "history" | "receipt" | "edit" | "delete" | "conversations" | "typing" | "presence"
  >;
  readonly sessions: SessionTable;
  readonly routing: RoutingBus;
  /** Pokes when a user's socket opens or closes here; pushes to the sockets watching presence. */
  readonly presence: PresenceBus;
  readonly clock: Clock;
  readonly limits: GatewayLimits;
  readonly log: GatewayLog;
  readonly metrics?: GatewayMetrics;
  /** URL path of the socket. */
  readonly path?: string;
}

interface Connection {
  readonly id: string;
  readonly ws: WebSocket;
  readonly userId: string;
  readonly deviceId: string;
  token: string;
  authExpiresAtMs: number;
  readonly openedAtMs: number;
  lastFrameAtMs: number;
  alive: boolean;
  /** Which heartbeat slice pings this connection (HEARTBEAT_SLICES). */
  readonly slice: number;
  floodStrikes: number;
  readonly bucket: TokenBucket;
  /** Made on the connection's first `part` / `typing` frame: most connections never send one (memory per connection). */
  parts: PartAssembler | undefined;
  typing: TypingThrottle | undefined;
}

/**
 * The heartbeat visits the connections in this many slices, one slice every heartbeatMs /
 * HEARTBEAT_SLICES: each connection is still pinged (and its session row renewed) once per
 * heartbeatMs, but a gateway never pings all its sockets at once — at 1,000 sockets one such
 * tick (1,000 ping writes and 1,000 session renewals) held the event loop ~1.4 s in a bench
 * profile, and every send arriving meanwhile waited or was refused.
 */
export const HEARTBEAT_SLICES = 10;
/** Longest run of routed deliveries before the gateway reads its sockets again (delivery-queue.ts). */
export const DELIVERY_SLICE_MS = 5;
/** Routed frames waiting for delivery at most; past it they are dropped and the clients resync. */
export const MAX_ROUTED_WAITING = 65_536;
/** Session rows written at once after a routing gap (one Redis round trip each, bounded in flight). */
export const RESYNC_SLICE = 256;

/** The part of net.Socket that #deliver writes pre-built frames to. */
interface RawSocket {
  cork(): void;
  uncork(): void;
  write(chunk: Buffer): boolean;
}

export class Gateway {
  readonly #options: GatewayOptions;
  readonly #wss: WebSocketServer;
  readonly #connections = new Map<string, Connection>();
  readonly #connectPacer: ConnectPacer;
  readonly #ticker: BackgroundLoop;
  readonly #presenceWatch: PresenceWatch;
  readonly #presenceSweep: BackgroundLoop;
  readonly #routed: DeliveryQueue<RoutedEnvelope>;
  #draining = false;
  #nextSlice = 0;
  /** Sockets corked by this turn's deliveries — one delivery slice's (#corkForTurn). */
  readonly #corked = new Set<RawSocket>();
  #tickSlice = 0;

  constructor(options: GatewayOptions) {
    this.#options = options;
    // Hard bound: twice the frame limit, so a frame between the two gets an error frame, not a close.
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: 2 * MAX_FRAME_BYTES,
      perMessageDeflate: false,
    });
    const { limits, clock } = options;
    this.#connectPacer = new ConnectPacer({
      ratePerS: limits.connectRatePerS,
      burst: limits.connectRatePerS,
      maxWaitMs: limits.connectMaxWaitMs,
    });
    this.#ticker = new BackgroundLoop({
      name: "gateway heartbeat",
      round: async () => {
        const slice = this.#tickSlice;
        this.#tickSlice = (slice + 1) % HEARTBEAT_SLICES;
        await this.#tick((c) => c.slice === slice);
        return false;
      },
      idleMs: Math.max(1, Math.floor(limits.heartbeatMs / HEARTBEAT_SLICES)),
      failureBackoff: { capMs: limits.heartbeatMs, jitter: "none" },
      onError: (err) => options.log.warn({ err }, "gateway tick failed"),
    });
    this.#presenceWatch = new PresenceWatch({
      bus: options.presence,
      sessions: options.sessions,
      nowMs: () => clock.nowMs(),
      push: (connectionId, frame) => {
        const c = this.#connections.get(connectionId);
        if (c) send(c.ws, frame);
      },
      onError: (err) => options.log.warn({ err }, "presence push failed; the next heartbeat reads again"),
    });
    this.#routed = new DeliveryQueue({
      deliver: (envelope) => this.#deliver(envelope),
      sliceMs: DELIVERY_SLICE_MS,
      maxPending: MAX_ROUTED_WAITING,
      onOverflow: (dropped) => {
        options.log.warn({ dropped }, "routed frames past the bound; dropped and resyncing clients");
        void this.#afterRoutingGap();
      },
      onError: (err) => options.log.warn({ err }, "a routed frame's delivery failed"),
    });
    this.#presenceSweep = new BackgroundLoop({
      name: "gateway presence sweep",
      round: async () => {
        await this.#presenceWatch.sweep();
        return false;
      },
      idleMs: limits.heartbeatMs,
      failureBackoff: { capMs: limits.heartbeatMs, jitter: "none" },
      onError: (err) => options.log.warn({ err }, "presence sweep failed"),
    });
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  async start(): Promise<void> {
    await this.#options.routing.subscribe(
      this.#options.gatewayId,
      (envelope) => this.#routed.push(envelope),
      () => void this.#afterRoutingGap(),
    );
    this.#ticker.start();
    this.#presenceSweep.start();
  }

  /** Takes over the server's upgrade requests on the socket path. */
  attach(server: Server): void {
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.#upgrade(request, socket, head);
    });
  }

  async #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(request.url ?? "/", "http://gateway");
    if (url.pathname !== (this.#options.path ?? "/v1/socket")) return refuse(socket, 404, "no socket here");
    if (this.#draining) return refuse(socket, 503, "draining; connect to another gateway");
    const waitMs = this.#connectPacer.reserve(this.#options.clock.monotonicMs());
    if (waitMs === undefined) return refuse(socket, 503, "too many new connections; retry with backoff");
    if (waitMs > 0) {
      // CH-13's rate, paced: this upgrade's slot comes in waitMs (connect-pacer.ts).
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      if (socket.destroyed) return;
      if (this.#draining) return refuse(socket, 503, "draining; connect to another gateway");
    }
    const header = request.headers.authorization;
    const token = header?.startsWith("Bearer ") ? header.slice(7).trim() : url.searchParams.get("token");
    if (!token || token.length > 2_048) return refuse(socket, 401, "a user token is required");
    const identity = await this.#options.tokens.verify(token, this.#options.clock.nowMs());
    if (!identity) return refuse(socket, 401, "the user token is not valid");
    this.#wss.handleUpgrade(request, socket, head, (ws) => {
      void this.#open(ws, token, identity);
    });
  }

  async #open(ws: WebSocket, token: string, identity: UserIdentity): Promise<void> {
    const { clock, limits } = this.#options;
    const nowMs = clock.nowMs();
    const connection: Connection = {
      id: randomUUID(),
      ws,
      userId: identity.userId,
      deviceId: identity.deviceId,
      token,
      authExpiresAtMs: identity.expiresAtMs,
      openedAtMs: nowMs,
      lastFrameAtMs: nowMs,
      alive: true,
      slice: this.#nextSlice++ % HEARTBEAT_SLICES,
      floodStrikes: 0,
      bucket: new TokenBucket({
        capacity: limits.frameBurst,
        ratePerS: limits.framesPerS,
        nowMs: clock.monotonicMs(),
      }),
      parts: undefined,
      typing: undefined,
    };
    this.#connections.set(connection.id, connection);
    this.#options.metrics?.onConnections(this.#connections.size);
    ws.on("pong", () => {
      connection.alive = true;
    });
    ws.on("message", (data, isBinary) => {
      void this.#onFrame(connection, isBinary ? "" : data.toString("utf8"), isBinary);
    });
    ws.on("close", () => this.#closed(connection));
    ws.on("error", () => {});
    try {
      await this.#writeSession(connection);
    } catch (err) {
      this.#options.log.warn(
        { err, connection: connection.id },
        "session row not written; the heartbeat retries",
      );
    }
    this.#poke(connection.userId);
    send(ws, { action: "welcome", connectionId: connection.id, gatewayId: this.#options.gatewayId });
  }

  /** Tells the gateways watching this user that its sockets changed (best effort: they re-read each heartbeat). */
  #poke(userId: string): void {
    this.#options.presence.poke(userId).catch(() => {});
  }

  /**
   * The routing subscription was cut and is back (a Redis restart or a lost link): frames
   * published meanwhile never reached this gateway, and a restarted Redis lost every session
   * row, so the send service would count these users offline until each row's heartbeat came
   * round (up to heartbeatMs). Every row is written again, in slices of RESYNC_SLICE, then
   * every client is told to `resync`: it syncs after its cursors, and the history has it all.
   */
  async #afterRoutingGap(): Promise<void> {
    const { log, limits } = this.#options;
    const open = [...this.#connections.values()];
    log.warn({ connections: open.length }, "routing was cut; rewriting session rows and resyncing clients");
    // This gateway's other Redis link may come back later than the subscriber: retry the rows
    // that failed (rows first, so what is sent after the resync finds its devices), for at most
    // a heartbeat, after which the heartbeat's own renewals take over.
    const deadline = performance.now() + limits.heartbeatMs;
    let left = open;
    for (let pauseMs = 100; left.length > 0; pauseMs = Math.min(2 * pauseMs, 2_000)) {
      const failed: Connection[] = [];
      for (let i = 0; i < left.length; i += RESYNC_SLICE) {
        const slice = left.slice(i, i + RESYNC_SLICE).filter((c) => this.#connections.has(c.id));
        const written = await Promise.allSettled(slice.map((c) => this.#writeSession(c)));
        written.forEach((w, k) => {
          if (w.status === "rejected") failed.push(slice[k]!);
        });
      }
      left = failed;
      if (left.length === 0 || performance.now() + pauseMs > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    if (left.length > 0) {
      log.warn({ failed: left.length }, "session rows not rewritten after the gap; the heartbeat retries");
    }
    for (const c of open) send(c.ws, { action: "resync" });
  }

  #writeSession(c: Connection): Promise<void> {
    return this.#options.sessions.put({
      userId: c.userId,
      deviceId: c.deviceId,
      gatewayId: this.#options.gatewayId,
      connectionId: c.id,
      expiresAtMs: this.#options.clock.nowMs() + this.#options.limits.sessionTtlMs,
    });
  }

  #closed(c: Connection): void {
    if (!this.#connections.delete(c.id)) return;
    this.#options.metrics?.onConnections(this.#connections.size);
    this.#presenceWatch.forget(c.id);
    // CH-16: best effort; the row's TTL is the safety net when this never runs.
    this.#options.sessions
      .remove(c.userId, c.deviceId, c.id)
      .then(() => this.#poke(c.userId))
      .catch(() => {});
  }

  async #onFrame(c: Connection, text: string, isBinary: boolean): Promise<void> {
    const { clock, limits } = this.#options;
    if (!c.bucket.tryTake(clock.monotonicMs())) {
      c.floodStrikes++;
      if (c.floodStrikes >= limits.floodStrikesMax) return void c.ws.close(CLOSE_FLOOD, "flooding");
      return this.#error(c, undefined, "FRAME_RATE_LIMITED", "too many frames; slow down");
    }
    c.floodStrikes = 0;
    c.lastFrameAtMs = clock.nowMs();
    if (isBinary) return this.#error(c, undefined, "FRAME_INVALID", "frames are JSON text, not binary");
    const parsed = parseFrame(text);
    if (!parsed.ok) return this.#error(c, parsed.ref, parsed.code, parsed.detail, parsed.field);
    try {
      await this.#route(c, parsed.frame);
    } catch (err) {
      const e = err as { code?: string; message?: string; fields?: { field?: string } };
      this.#error(
        c,
        parsed.frame.ref,
        e.code ?? "BACKEND_UNAVAILABLE",
        e.message ?? "failed",
        e.fields?.field,
      );
    }
  }

  async #route(c: Connection, frame: ClientFrame): Promise<void> {
    const { backend } = this.#options;
    switch (frame.action) {
      case "ping":
        return send(c.ws, { action: "pong", ref: frame.ref });
      case "send": {
        const input = {
          chatId: String(frame.chatId),
          clientMsgId: frame.clientMsgId,
          body: frame.body,
          mediaId: frame.mediaId,
        };
        return send(c.ws, { action: "sent", ref: frame.ref, ...(await backend.send(c.token, input, c.id)) });
      }
      case "part": {
        c.parts ??= new PartAssembler();
        const body = c.parts.add(frame);
        if (body === undefined) return;
        const input = { chatId: String(frame.chatId), clientMsgId: frame.clientMsgId, body };
        const sent =
          frame.messageId === undefined
            ? await backend.send(c.token, input, c.id)
            : await backend.edit(c.token, { ...input, messageId: String(frame.messageId) });
        return send(c.ws, { action: "sent", ref: frame.ref, ...sent });
      }
      case "edit": {
        const input = {
          chatId: String(frame.chatId),
          messageId: String(frame.messageId),
          clientMsgId: frame.clientMsgId,
          body: frame.body,
        };
        return send(c.ws, { action: "sent", ref: frame.ref, ...(await backend.edit(c.token, input)) });
      }
      case "delete": {
        const input = { chatId: String(frame.chatId), messageId: String(frame.messageId) };
        return send(c.ws, { action: "sent", ref: frame.ref, ...(await backend.delete(c.token, input)) });
      }
      case "conversations": {
        const list = await backend.conversations(c.token);
        return this.#sendLarge(c, `conversations-${frame.ref ?? randomUUID()}`, {
          action: "conversations",
          ref: frame.ref,
          ...list,
        });
      }
      case "typing":
        // Ephemeral and throttled here: past one per conversation per interval, dropped unanswered.
        c.typing ??= new TypingThrottle();
        if (!c.typing.admit(String(frame.chatId), this.#options.clock.monotonicMs())) return;
        await backend.typing(c.token, { chatId: String(frame.chatId) });
        return;
      case "presence": {
        const chatId = String(frame.chatId);
        if (frame.watch === false) {
          // Only this socket's own watch ends: nothing to ask the send service.
          await this.#presenceWatch.unwatch(c.id, chatId);
          return send(c.ws, { action: "presence", ref: frame.ref, chatId, watching: false });
        }
        const answer = await backend.presence(c.token, { chatId });
        if (frame.watch === true && this.#connections.has(c.id))
          await this.#presenceWatch.watch(c.id, chatId, answer.users);
        return this.#sendLarge(c, `presence-${frame.ref ?? randomUUID()}`, {
          action: "presence",
          ref: frame.ref,
          chatId,
          ...(frame.watch === true ? { watching: true } : {}),
          ...answer,
        });
      }
      case "sync": {
        const input = { chatId: String(frame.chatId), after: String(frame.after), limit: frame.limit };
        const page = await backend.history(c.token, input);
        return this.#sendLarge(c, `sync-${frame.ref ?? randomUUID()}`, {
          action: "history",
          ref: frame.ref,
          chatId: String(frame.chatId),
          ...page,
        });
      }
      case "ack":
      case "read": {
        const kind = frame.action === "ack" ? "delivered" : "read";
        await backend.receipt(c.token, { chatId: String(frame.chatId), kind, seq: String(frame.seq) });
        return;
      }
      case "refresh": {
        const identity = await this.#options.tokens.verify(frame.token, this.#options.clock.nowMs());
        if (!identity || identity.userId !== c.userId || identity.deviceId !== c.deviceId) {
          return this.#error(
            c,
            frame.ref,
            "FRAME_INVALID",
            "the token is not valid for this user and device",
            "token",
          );
        }
        c.token = frame.token;
        c.authExpiresAtMs = identity.expiresAtMs;
        return send(c.ws, {
          action: "refreshed",
          ref: frame.ref,
          expiresAt: new Date(identity.expiresAtMs).toISOString(),
        });
      }
    }
  }

  #error(c: Connection, ref: string | undefined, code: string, message: string, field?: string): void {
    this.#options.metrics?.onFrameError(code);
    send(c.ws, { action: "error", ref, code, message, ...(field ? { field } : {}) });
  }

  /**
   * A routed frame goes to each of its connections encoded ONCE: the JSON text, its parts
   * and their WebSocket frames (text-frames.ts) are made for the first open connection and
   * the same bytes are written to every other's socket (a group's message reaches up to
   * 1,023 sockets here) — one buffered write per frame instead of ws's framing per socket.
   *
   * Each socket written is corked until the end of this turn of the event loop (one slice of
   * the delivery queue): a routing batch carries many frames, and the frames of one slice for
   * one socket leave in ONE writev instead of one system call each. The
   * write was most of a gateway's time in the bench's profiles; at saturation a socket got
   * 1.55–1.84 frames a turn there (1.0 at low rates, where nothing is held: a turn is µs).
   */
  #deliver(envelope: RoutedEnvelope): void {
    const message = envelope.frame.message as { id?: string; createdAt?: string } | undefined;
    let texts: string[] | undefined;
    let frames: Buffer[] | undefined;
    let delivered = 0;
    for (const id of envelope.connectionIds) {
      const c = this.#connections.get(id);
      // gone: the device syncs after its last seq when it reconnects
      if (!c || c.ws.readyState !== c.ws.OPEN) continue;
      texts ??= splitOutgoing(message?.id ?? randomUUID(), JSON.stringify(envelope.frame));
      const socket = rawSocket(c.ws);
      if (socket === undefined) for (const text of texts) c.ws.send(text);
      else {
        frames ??= textFrames(texts);
        this.#corkForTurn(socket);
        for (const frame of frames) socket.write(frame);
      }
      delivered++;
    }
    if (delivered > 0) this.#options.metrics?.onDelivered(message?.createdAt, delivered);
  }

  /**
   * Corks `socket` until the next tick (once a turn). net.Socket's cork nests (ws corks
   * around each frame it sends itself), so everything written meanwhile is flushed together
   * by the outer uncork.
   */
  #corkForTurn(socket: RawSocket): void {
    if (this.#corked.has(socket)) return;
    if (this.#corked.size === 0) process.nextTick(() => this.#uncorkAll());
    socket.cork();
    this.#corked.add(socket);
  }

  #uncorkAll(): void {
    for (const socket of this.#corked) socket.uncork();
    this.#corked.clear();
  }

  #sendLarge(c: Connection, id: string, frame: Record<string, unknown>): void {
    if (c.ws.readyState !== c.ws.OPEN) return;
    for (const text of splitOutgoing(id, JSON.stringify(frame))) c.ws.send(text);
  }

  /** One heartbeat of every connection: ping the live, terminate the silent, close the idle, the old and the unauthenticated. */
  tick(): Promise<void> {
    return this.#tick(() => true);
  }

  /** The heartbeat of the connections `visit` picks (the loop: one slice at a time). */
  async #tick(visit: (c: Connection) => boolean): Promise<void> {
    const { clock, limits } = this.#options;
    const nowMs = clock.nowMs();
    const renewals: Promise<void>[] = [];
    for (const c of this.#connections.values()) {
      if (!visit(c)) continue;
      if (!c.alive) {
        c.ws.terminate(); // CH-12: no pong since the last tick
        continue;
      }
      if (nowMs - c.lastFrameAtMs >= limits.idleMs) c.ws.close(CLOSE_IDLE, "idle");
      else if (nowMs - c.openedAtMs >= limits.lifetimeMs)
        c.ws.close(CLOSE_LIFETIME, "maximum lifetime; reconnect");
      else if (nowMs >= c.authExpiresAtMs)
        c.ws.close(CLOSE_TOKEN_EXPIRED, "token expired; reconnect with a new one");
      else {
        c.alive = false;
        c.ws.ping();
        renewals.push(this.#writeSession(c));
      }
    }
    await Promise.all(renewals);
  }

  /** CH-27: refuse new sockets, then close the open ones with 4000, spread over drainMs. */
  async drain(): Promise<void> {
    this.#draining = true;
    await this.#ticker.stop();
    await this.#presenceSweep.stop();
    const open = [...this.#connections.values()];
    const spacingMs = open.length > 0 ? this.#options.limits.drainMs / open.length : 0;
    for (const c of open) {
      c.ws.close(CLOSE_DRAINING, "draining; reconnect with jitter");
      if (spacingMs >= 1)
        await new Promise((resolve) => setTimeout(resolve, spacingMs * systemRandom.next() * 2));
    }
    await Promise.all(
      open.map((c) =>
        c.ws.readyState === c.ws.CLOSED
          ? undefined
          : new Promise((resolve) => {
              c.ws.once("close", resolve);
              setTimeout(() => {
                c.ws.terminate();
                resolve(undefined);
              }, 1_000).unref();
            }),
      ),
    );
    await this.#options.routing.close();
    this.#wss.close();
  }
}

/**
 * The net.Socket under a server-side `ws` WebSocket, kept in `_socket` (not public API, as
 * socket.io's engine also relies on): without one, frames go out through ws one by one.
 */
function rawSocket(ws: WebSocket): RawSocket | undefined {
  return (ws as unknown as { _socket?: RawSocket })._socket;
}

function send(ws: WebSocket, frame: Record<string, unknown>): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}

function refuse(socket: Duplex, status: number, reason: string): void {
  const text = JSON.stringify({ code: status === 401 ? "AUTH_INVALID" : "GATEWAY_REFUSED", detail: reason });
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? "Unauthorized" : status === 404 ? "Not Found" : "Service Unavailable"}\r\n` +
      `content-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}
