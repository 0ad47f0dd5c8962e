/**
 * Routing between gateways (CH-04): a frame for a connection held by gateway B is published
 * on B's own channel, and only B delivers it. Redis pub/sub (or the in-process bus) is the
 * transport, on purpose not the durable stream: the durable queue is the history itself, so a
 * routed frame that is lost (a gateway restarting, a subscriber reconnecting) costs nothing
 * but latency — the device resumes "after its last seq" on reconnect, and an unacked message
 * is fetched again at the next sync. Storing every routed frame in JetStream would write each
 * message a second time for a guarantee the history already gives. The stream serves the big
 * channels' fan-out instead (CH-20), where durable per-slice consumers are what is wanted.
 *
 * @example
 * await bus.subscribe("gw-2", (envelope) => gateway.deliver(envelope));
 * await bus.publish("gw-2", { connectionIds: ["c7"], frame: { action: "message", ... } });
 * await bus.publishMany("gw-2", [envelopeA, envelopeB]); // one message on the channel
 */
export interface RoutedEnvelope {
  /** The gateway-local connections that should receive the frame. */
  readonly connectionIds: readonly string[];
  readonly frame: Readonly<Record<string, unknown>>;
}

export interface RoutingBus {
  /** Sends to the gateway's channel; resolves with the number of gateways that listened (0 = nobody: "gone"). */
  publish(gatewayId: string, envelope: RoutedEnvelope): Promise<number>;
  /**
   * Several envelopes in ONE message on the gateway's channel (a routing batch's frames for
   * that gateway); the subscriber's handler gets them one by one, in this order.
   */
  publishMany(gatewayId: string, envelopes: readonly RoutedEnvelope[]): Promise<number>;
  /**
   * Delivers the gateway's envelopes to `handler`. `onGap` runs when the subscription was cut
   * and is listening again: what was published meanwhile is lost (pub/sub keeps nothing), and
   * the engine may have lost its keys too (a restart) — the gateway then rewrites its session
   * rows and tells its clients to sync (the history has everything).
   */
  subscribe(
    gatewayId: string,
    handler: (envelope: RoutedEnvelope) => void,
    onGap?: () => void,
  ): Promise<void>;
  close(): Promise<void>;
}
