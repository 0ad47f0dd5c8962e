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
  /** Per channel: its envelopes' handler and what to do after a gap. */
  readonly #subscriptions = new Map<
    string,
    { handler: (envelope: RoutedEnvelope) => void; onGap: (() => void) | undefined }
  >();
  /** The subscriber lost its connection since it last listened (ioredis reconnects by itself). */
  #cut = false;

  constructor(publisher: Redis, subscriber: Redis, prefix: string) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
    this.#prefix = prefix;
    subscriber.on("message", (channel: string, text: string) => {
      const subscription = this.#subscriptions.get(channel);
      if (!subscription) return;
      for (const envelope of JSON.parse(text) as RoutedEnvelope[]) subscription.handler(envelope);
    });
    subscriber.on("close", () => {
      if (this.#subscriptions.size > 0) this.#cut = true;
    });
    subscriber.on("ready", () => {
      if (!this.#cut) return;
      this.#cut = false;
      void this.#resubscribed();
    });
  }

  /**
   * After a reconnect: subscribe again explicitly (confirmed by Redis, so from here on every
   * publish reaches us), then report the gap — whatever the gateway does about it reads state
   * that is complete up to a moment the subscription already covers.
   */
  async #resubscribed(): Promise<void> {
    for (const [channel, { onGap }] of this.#subscriptions) {
      try {
        await this.#subscriber.subscribe(channel);
      } catch {
        this.#cut = true; // cut again before it answered: the next "ready" retries
        return;
      }
      onGap?.();
    }
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

  async subscribe(
    gatewayId: string,
    handler: (envelope: RoutedEnvelope) => void,
    onGap?: () => void,
  ): Promise<void> {
    const channel = this.#channel(gatewayId);
    this.#subscriptions.set(channel, { handler, onGap });
    await this.#subscriber.subscribe(channel);
  }

  async close(): Promise<void> {
    this.#subscriptions.clear();
  }
}
