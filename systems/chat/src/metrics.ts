/**
 * The Prometheus metrics of chat, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics): connections,
 * messages, routing outcomes, delivery lag, pushes.
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface SystemMetrics {
  readonly buildInfo: Gauge<"version">;
  /** Messages accepted: `created` true for new ones, false for resends answered with the first. */
  readonly messages: Counter<"created">;
  /** Routing outcomes per recipient connection or user: delivered to a gateway, gateway gone, offline. */
  readonly routed: Counter<"outcome">;
  readonly deliveryErrors: Counter;
  /** Open sockets on this gateway. */
  readonly connections: Gauge;
  /** Frames refused with an error frame, by code. */
  readonly frameErrors: Counter<"code">;
  /** From the message's creation to its frame leaving this gateway, once per message and gateway. */
  readonly deliveryLag: Histogram;
  /** Frames of messages written to this gateway's sockets. */
  readonly deliveries: Counter;
  readonly pushes: Counter<"outcome">;
  /** CH-20: members a slice worker routed a channel message to. */
  readonly fanoutMembers: Counter<"slice">;
  readonly channelEventsRelayed: Counter;
  /** Text sends per batched statement (the send path's group commit); its count is statements. */
  readonly sendBatchSize: Histogram;
  /** What the API granted: user tokens issued, media uploads authorized, push tokens registered. */
  readonly grants: Counter<"kind">;
  readonly mediaSwept: Counter<"what">;
}

export function createMetrics(registry: Registry, build: { version: string }): SystemMetrics {
  const registers = [registry];
  const buildInfo = new Gauge({
    name: "chat_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers,
  });
  buildInfo.set({ version: build.version }, 1);
  return {
    buildInfo,
    messages: new Counter({
      name: "chat_messages_total",
      help: "Messages accepted (created=false: a resend answered with the first)",
      labelNames: ["created"],
      registers,
    }),
    routed: new Counter({
      name: "chat_routed_total",
      help: "Routing outcomes: delivered (a gateway had it), gone (its gateway is no more), offline",
      labelNames: ["outcome"],
      registers,
    }),
    deliveryErrors: new Counter({
      name: "chat_delivery_errors_total",
      help: "Deliveries that failed after the message was stored (it waits in the history)",
      registers,
    }),
    connections: new Gauge({ name: "chat_connections", help: "Open sockets on this gateway", registers }),
    frameErrors: new Counter({
      name: "chat_frame_errors_total",
      help: "Frames answered with an error frame, by code",
      labelNames: ["code"],
      registers,
    }),
    deliveryLag: new Histogram({
      name: "chat_delivery_lag_seconds",
      help: "From a message's creation to its frame leaving this gateway, once per message and gateway",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    deliveries: new Counter({
      name: "chat_deliveries_total",
      help: "Message frames written to this gateway's sockets (one per connection reached)",
      registers,
    }),
    pushes: new Counter({
      name: "chat_pushes_total",
      help: "Push notifications by outcome (sent, token-gone, failed)",
      labelNames: ["outcome"],
      registers,
    }),
    fanoutMembers: new Counter({
      name: "chat_fanout_members_total",
      help: "Channel members a slice worker routed a message to, by slice",
      labelNames: ["slice"],
      registers,
    }),
    channelEventsRelayed: new Counter({
      name: "chat_channel_events_relayed_total",
      help: "Channel events the outbox relay published because the send path did not (its publish failed, or its process died first)",
      registers,
    }),
    sendBatchSize: new Histogram({
      name: "chat_send_batch_size",
      help: "Text sends written by one batched statement (concurrent sends across conversations, one commit)",
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers,
    }),
    mediaSwept: new Counter({
      name: "chat_media_swept_total",
      help: "The media orphan sweep's removals: rows of uploads no message carries, and their objects",
      labelNames: ["what"],
      registers,
    }),
    grants: new Counter({
      name: "chat_grants_total",
      help: "What the API granted, by kind: user_token issued, media_upload authorized, push_token registered",
      labelNames: ["kind"],
      registers,
    }),
  };
}
