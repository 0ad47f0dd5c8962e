/**
 * The send path, in the text's order (CH-03, CH-17): (1) write the message durably, with its
 * sortable id and its position, before anything else; (2) look up where the recipients are
 * connected in the session table; (3) route the frame to the gateways holding those
 * connections, and hand every recipient with no live connection — or whose gateway is gone —
 * to the push path. Steps 2–3 are an optimisation over the history: a failure there is
 * counted and swallowed, the sender still gets its accepted message, and the recipients get
 * it at their next sync ("the history is the queue", CH-05).
 *
 * `send` resolves once step 1 is done: its `delivered` promise (never rejected) settles when
 * steps 2–3 have run. The single HTTP route awaits it before answering; the gateways' batch
 * route answers at once, so a gateway's calls in flight (CH-13's bound) are not held while
 * the message is routed. Deliveries in the background are bounded (MAX_BACKGROUND_DELIVERIES):
 * past it a message is not routed live (counted as a delivery error) — it is in the history.
 *
 * A delivery that fails (Redis away: its session lookup or its publish) is tried again
 * after REDELIVERY_DELAYS_MS, at most that many times and at most MAX_REDELIVERIES waiting:
 * a message stored while the send service's Redis link was down reaches the live devices
 * once it is back, instead of waiting for their next sync. Past the last try it waits in the
 * history (the gateways resync their clients when their own routing was cut). A channel's
 * event is not retried here: it is in the outbox, and the outbox relay publishes it.
 *
 * Routing is batched (kit's GroupCommit, one batch at a time): the frames submitted while a
 * batch is routed go together in the next — ONE session lookup for all their recipients and
 * ONE publish per gateway carrying every frame for it, in submission order (so a
 * conversation's messages leave in seq order, and Redis pub/sub keeps that order).
 *
 * A resend (same client_msg_id) routes the stored message again: the first attempt may have
 * died between its write and its delivery, and a duplicate delivery is deduplicated by the
 * client by message id (CH-10).
 *
 * @example
 * const path = new SendPath({ history, offsets, sessions, routing, push, clock, onDeliveryError });
 * const { message, created, delivered } = await path.send(newMessage);
 * await delivered; // routed (or counted as failed); the message was stored before either
 */
import type { Clock } from "@casebook/kit/clock";
import { GroupCommit } from "@casebook/kit/group-commit";
import type { ChatKind, Message } from "./conversation.ts";
import type { HistoryPort, NewMessage } from "./history-port.ts";
import { type Receipt, type ReceiptMove, receiptFrame } from "./receipts.ts";
import type { RoutedEnvelope, RoutingBus } from "./routing.ts";
import type { SessionRow, SessionTable } from "./sessions.ts";
import { messageJson } from "./wire.ts";

/** Who to wake for a message they did not get live (CH-18, CH-21). */
export interface OfflinePort {
  notify(userIds: readonly string[], message: Message): Promise<void>;
}

export const noPush: OfflinePort = { notify: async () => {} };

/**
 * CH-20: a channel's message leaves the send path as ONE event; slice workers fan it out. The
 * event was written to the outbox with the message: `publish` here is the first try, and it
 * marks the outbox row once the event is out (a relay publishes what it did not).
 */
export interface ChannelEvents {
  publish(message: Message): Promise<void>;
}

export interface SendPathPorts {
  readonly history: HistoryPort;
  readonly offsets: { offsetOf(chatId: bigint, id: bigint): Promise<bigint> };
  readonly sessions: SessionTable;
  readonly routing: RoutingBus;
  readonly offline: OfflinePort;
  /** Where channel messages go instead of per-member routing; unset: channels are routed like groups. */
  readonly channelEvents?: ChannelEvents;
  readonly clock: Clock;
  /** A delivery step failed after the message was stored (counted, logged; never thrown to the sender). */
  readonly onDeliveryError: (err: unknown) => void;
  /** Frames routed, per gateway publish that reached nobody ("gone"), pushes: for /metrics. */
  readonly onRouted?: (outcome: "delivered" | "gone" | "offline", count: number) => void;
}

export interface Sent {
  readonly message: Message;
  readonly kind: ChatKind;
  readonly created: boolean;
  /** Settles (never rejects) once the message was routed, pushed, or its delivery failed and was counted. */
  readonly delivered: Promise<void>;
}

/**
 * Frames routed together: one session lookup and one publish per gateway for all of them. A
 * larger batch also gives each gateway more frames per socket per system call (a slice's
 * writes are corked): 256 → 1,024 raised chat's deliveries/s at saturation in three of three
 * interleaved bench pairs (README, Bench).
 */
export const MAX_ROUTE_BATCH = 1_024;
/** Frames waiting for the routing batch in flight; past it a route is refused (GROUP_COMMIT_QUEUE_FULL). */
export const MAX_ROUTE_PENDING = 8_192;
/** Messages being delivered after their senders were answered; past it a message waits in the history. */
export const MAX_BACKGROUND_DELIVERIES = 8_192;
/** Pauses before each new try of a failed delivery (~15 s in all: a Redis restart, a failover). */
export const REDELIVERY_DELAYS_MS: readonly number[] = [250, 500, 1_000, 2_000, 4_000, 8_000];
/** Failed deliveries waiting for their next try; past it a message waits in the history. */
export const MAX_REDELIVERIES = 8_192;

interface RouteItem {
  readonly userIds: readonly string[];
  readonly frame: Record<string, unknown>;
}

export class SendPath {
  readonly #ports: SendPathPorts;
  readonly #routes: GroupCommit<RouteItem, Set<string>>;
  #background = 0;
  /** Timers of the failed deliveries waiting for their next try. */
  readonly #redeliveries = new Set<ReturnType<typeof setTimeout>>();
  #closed = false;

  constructor(ports: SendPathPorts) {
    this.#ports = ports;
    this.#routes = new GroupCommit((items: RouteItem[]) => this.#routeBatch(items), {
      maxBatch: MAX_ROUTE_BATCH,
      maxPending: MAX_ROUTE_PENDING,
    });
  }

  async send(input: NewMessage): Promise<Sent> {
    const appended = await this.#ports.history.append(input);
    let { message } = appended;
    if (message.seq === undefined) {
      message = { ...message, seq: await this.#ports.offsets.offsetOf(message.chatId, message.id) };
    }
    const delivered = this.#deliverAfterWrite(message, appended.kind, appended.recipients);
    return { message, kind: appended.kind, created: appended.created, delivered };
  }

  /** Steps 2–3 for a stored message; bounded, and every failure counted, never thrown. */
  async #deliverAfterWrite(
    message: Message,
    kind: ChatKind,
    recipients?: readonly string[],
    attempt = 0,
  ): Promise<void> {
    if (this.#background >= MAX_BACKGROUND_DELIVERIES) {
      this.#ports.onDeliveryError(
        new Error(`${this.#background} deliveries in flight: message ${message.id} waits in the history`),
      );
      return;
    }
    this.#background++;
    try {
      if (kind === "channel" && this.#ports.channelEvents) await this.#ports.channelEvents.publish(message);
      else await this.deliver(message, recipients);
    } catch (err) {
      this.#ports.onDeliveryError(err);
      // A channel's event is in the outbox, written with the message: its relay retries it
      // for as long as the stream is down, in this process or another (CH-20).
      if (kind !== "channel") this.#redeliverLater(message, kind, recipients, attempt);
    } finally {
      this.#background--;
    }
  }

  #redeliverLater(
    message: Message,
    kind: ChatKind,
    recipients: readonly string[] | undefined,
    attempt: number,
  ) {
    const delayMs = REDELIVERY_DELAYS_MS[attempt];
    if (this.#closed || delayMs === undefined || this.#redeliveries.size >= MAX_REDELIVERIES) return;
    const timer = setTimeout(() => {
      this.#redeliveries.delete(timer);
      void this.#deliverAfterWrite(message, kind, recipients, attempt + 1);
    }, delayMs);
    timer.unref();
    this.#redeliveries.add(timer);
  }

  /** Failed deliveries waiting for their next try (for tests and /metrics). */
  get redeliveriesWaiting(): number {
    return this.#redeliveries.size;
  }

  /**
   * Resolves once every delivery started so far has been routed (tests, shutdown); failed
   * deliveries still waiting for a new try are dropped — their messages are in the history.
   */
  async drain(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#redeliveries) clearTimeout(timer);
    this.#redeliveries.clear();
    await this.#routes.drain();
  }

  /** CH-11: the receipt updates the history, then reaches the senders by the same path as a message. */
  async receipt(receipt: Receipt): Promise<ReceiptMove | undefined> {
    const move = await this.#ports.history.receipt(receipt);
    if (!move || move.senders.length === 0) return move;
    try {
      await this.route(move.senders, receiptFrame(receipt, move));
    } catch (err) {
      this.#ports.onDeliveryError(err);
    }
    return move;
  }

  /** Routes a frame to the live devices of `userIds`; returns the users reached. */
  route(userIds: readonly string[], frame: Record<string, unknown>): Promise<Set<string>> {
    if (userIds.length === 0) return Promise.resolve(new Set());
    return this.#routes.submit({ userIds, frame });
  }

  /**
   * One routing batch: a session lookup of every recipient of every frame, then per gateway
   * one publish with the frames for its connections, in the items' order. A user counts as
   * reached by an item when a gateway holding one of their live rows listened.
   */
  async #routeBatch(items: readonly RouteItem[]): Promise<Set<string>[]> {
    const all = new Set<string>();
    for (const item of items) for (const userId of item.userIds) all.add(userId);
    const rows = await this.#ports.sessions.lookup([...all], this.#ports.clock.nowMs());
    const rowsOf = new Map<string, SessionRow[]>();
    for (const row of rows) {
      const list = rowsOf.get(row.userId);
      if (list) list.push(row);
      else rowsOf.set(row.userId, [row]);
    }
    // Per gateway, its envelopes in item order; per item, which gateways carry it to whom.
    const envelopes = new Map<string, RoutedEnvelope[]>();
    const carried = items.map(() => new Map<string, SessionRow[]>());
    items.forEach((item, i) => {
      const perGateway = carried[i]!;
      for (const userId of new Set(item.userIds)) {
        for (const row of rowsOf.get(userId) ?? []) {
          const list = perGateway.get(row.gatewayId);
          if (list) list.push(row);
          else perGateway.set(row.gatewayId, [row]);
        }
      }
      for (const [gatewayId, gatewayRows] of perGateway) {
        const list = envelopes.get(gatewayId) ?? [];
        list.push({ connectionIds: gatewayRows.map((row) => row.connectionId), frame: item.frame });
        envelopes.set(gatewayId, list);
      }
    });
    const gateways = [...envelopes.keys()];
    const listeners = await Promise.all(
      gateways.map((gatewayId) => this.#ports.routing.publishMany(gatewayId, envelopes.get(gatewayId)!)),
    );
    const heard = new Map(gateways.map((gatewayId, k) => [gatewayId, listeners[k]! > 0]));
    return carried.map((perGateway) => {
      const reached = new Set<string>();
      for (const [gatewayId, gatewayRows] of perGateway) {
        const ok = heard.get(gatewayId) === true;
        if (ok) for (const row of gatewayRows) reached.add(row.userId);
        this.#ports.onRouted?.(ok ? "delivered" : "gone", gatewayRows.length);
      }
      return reached;
    });
  }

  /** Steps 2 and 3: session lookup, routing per gateway, push for whoever is not reached. */
  async deliver(message: Message, members?: readonly string[]): Promise<void> {
    const recipients = members ?? (await this.#ports.history.recipients(message.chatId));
    const reached = await this.route(recipients, { action: "message", message: messageJson(message) });
    // CH-17: a gateway that is gone counts as no connection; CH-18: no connection → push.
    const offline = recipients.filter((userId) => userId !== message.senderId && !reached.has(userId));
    // An edit or a delete wakes nobody: the device sees it at its next sync.
    if (offline.length > 0 && (message.kind ?? "text") === "text") {
      this.#ports.onRouted?.("offline", offline.length);
      await this.#ports.offline.notify(offline, message);
    }
  }
}
