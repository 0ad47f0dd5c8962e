/**
 * The routing bus on Redis pub/sub (see `domain/routing.ts` for why pub/sub and not the
 * stream): gateway B subscribes to `<prefix>gw:<B>` on its own connection (a subscribed
 * Redis connection can run nothing else); senders PUBLISH there, and PUBLISH's reply — the
 * number of subscribers that got it — tells "gone" (0) from delivered. A message on the channel is
 * a JSON array of envelopes (a routing batch's frames for that gateway, in order).
 *
 * @example
 * const bus = new RedisRouting(publisher, subscriber, "chat:");
 */
import type { Redis } from "ioredis";
import type { RoutedEnvelope, RoutingBus } from "../domain/routing.ts";

export class RedisRouting implements RoutingBus {
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #handlers = new Map<string, (envelope: RoutedEnvelope) => void>();

  constructor(publisher: Redis, subscriber: Redis, prefix: string) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
    this.#prefix = prefix;
    subscriber.on("message", (channel: string, text: string) => {
      const handler = this.#handlers.get(channel);
      if (!handler) return;
      for (const envelope of JSON.parse(text) as RoutedEnvelope[]) handler(envelope);
    });
  }

  #channel(gatewayId: string): string {
    return `${this.#prefix}gw:${gatewayId}`;
  }

  publish(gatewayId: string, envelope: RoutedEnvelope): Promise<number> {
    return this.publishMany(gatewayId, [envelope]);
  }

  publishMany(gatewayId: string, envelopes: readonly RoutedEnvelope[]): Promise<number> {
    return this.#publisher.publish(this.#channel(gatewayId), JSON.stringify(envelopes));
  }

  async subscribe(gatewayId: string, handler: (envelope: RoutedEnvelope) => void): Promise<void> {
    const channel = this.#channel(gatewayId);
    this.#handlers.set(channel, handler);
    await this.#subscriber.subscribe(channel);
  }

  async close(): Promise<void> {
    this.#handlers.clear();
  }
}
