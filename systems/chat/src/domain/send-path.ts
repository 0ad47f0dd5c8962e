/**
 * The send path, in the text's order (CH-03, CH-17): (1) write the message durably, with its
 * sortable id and its position, before anything else; (2) look up where the recipients are
 * connected in the session table; (3) route the frame to the gateways holding those
 * connections, and hand every recipient with no live connection — or whose gateway is gone —
 * to the push path. Steps 2–3 are an optimisation over the history: a failure there is
 * counted and swallowed, the sender still gets its accepted message, and the recipients get
 * it at their next sync ("the history is the queue", CH-05).
 *
 * A resend (same client_msg_id) routes the stored message again: the first attempt may have
 * died between its write and its delivery, and a duplicate delivery is deduplicated by the
 * client by message id (CH-10).
 *
 * @example
 * const path = new SendPath({ history, offsets, sessions, routing, push, clock, onDeliveryError });
 * const { message, created } = await path.send(newMessage);
 */
import type { Clock } from "@casebook/kit/clock";
import type { ChatKind, Message } from "./conversation.ts";
import type { HistoryPort, NewMessage } from "./history-port.ts";
import { type Receipt, type ReceiptMove, receiptFrame } from "./receipts.ts";
import type { RoutingBus } from "./routing.ts";
import type { SessionRow, SessionTable } from "./sessions.ts";
import { messageJson } from "./wire.ts";

/** Who to wake for a message they did not get live (CH-18, CH-21). */
export interface OfflinePort {
  notify(userIds: readonly string[], message: Message): Promise<void>;
}

export const noPush: OfflinePort = { notify: async () => {} };

/** CH-20: a channel's message leaves the send path as ONE event; slice workers fan it out. */
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
}

export class SendPath {
  readonly #ports: SendPathPorts;

  constructor(ports: SendPathPorts) {
    this.#ports = ports;
  }

  async send(input: NewMessage): Promise<Sent> {
    const appended = await this.#ports.history.append(input);
    let { message } = appended;
    if (message.seq === undefined) {
      message = { ...message, seq: await this.#ports.offsets.offsetOf(message.chatId, message.id) };
    }
    try {
      if (appended.kind === "channel" && this.#ports.channelEvents)
        await this.#ports.channelEvents.publish(message);
      else await this.deliver(message, appended.recipients);
    } catch (err) {
      this.#ports.onDeliveryError(err);
    }
    return { message, kind: appended.kind, created: appended.created };
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
  async route(userIds: readonly string[], frame: Record<string, unknown>): Promise<Set<string>> {
    const rows = await this.#ports.sessions.lookup(userIds, this.#ports.clock.nowMs());
    const reached = new Set<string>();
    for (const [gatewayId, gatewayRows] of byGateway(rows)) {
      const listeners = await this.#ports.routing.publish(gatewayId, {
        connectionIds: gatewayRows.map((row) => row.connectionId),
        frame,
      });
      if (listeners > 0) for (const row of gatewayRows) reached.add(row.userId);
      this.#ports.onRouted?.(listeners > 0 ? "delivered" : "gone", gatewayRows.length);
    }
    return reached;
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

function byGateway(rows: readonly SessionRow[]): Map<string, SessionRow[]> {
  const groups = new Map<string, SessionRow[]>();
  for (const row of rows) {
    const list = groups.get(row.gatewayId) ?? [];
    list.push(row);
    groups.set(row.gatewayId, list);
  }
  return groups;
}
