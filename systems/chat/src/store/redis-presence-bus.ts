/**
 * The presence bus on Redis pub/sub: one channel per user, `<prefix>presence:<user>`; a poke is
 * a PUBLISH of nothing but the user (there is no state to lose: the watchers read the session
 * table after it, see `domain/presence.ts`). The process subscribes to a user's channel while
 * any of its listeners watches that user, on the subscribed connection the routing bus uses
 * (a subscribed connection serves any number of channels; each bus reads only its own). After
 * a reconnect ioredis subscribes again by itself; the pokes published meanwhile are lost, which
 * the watchers' per-heartbeat re-read covers.
 *
 * @example
 * const bus = new RedisPresenceBus(publisher, subscriber, "chat:");
 */
import type { Redis } from "ioredis";
import type { PresenceBus, PresenceListener } from "../domain/presence.ts";

export class RedisPresenceBus implements PresenceBus {
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #channelPrefix: string;
  readonly #listeners = new Map<string, Set<PresenceListener>>();

  constructor(publisher: Redis, subscriber: Redis, prefix: string) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
    this.#channelPrefix = `${prefix}presence:`;
    subscriber.on("message", (channel: string) => {
      if (!channel.startsWith(this.#channelPrefix)) return;
      const userId = channel.slice(this.#channelPrefix.length);
      for (const listener of this.#listeners.get(userId) ?? []) listener(userId);
    });
  }

  async poke(userId: string): Promise<void> {
    await this.#publisher.publish(this.#channelPrefix + userId, "");
  }

  async listen(listener: PresenceListener, userIds: readonly string[]): Promise<void> {
    const fresh: string[] = [];
    for (const userId of userIds) {
      const set = this.#listeners.get(userId) ?? new Set<PresenceListener>();
      if (set.size === 0) fresh.push(userId);
      set.add(listener);
      this.#listeners.set(userId, set);
    }
    if (fresh.length === 0) return;
    try {
      await this.#subscriber.subscribe(...fresh.map((userId) => this.#channelPrefix + userId));
    } catch (err) {
      // Not subscribed: forget these users again, so the next listen subscribes them.
      for (const userId of fresh) this.#listeners.delete(userId);
      throw err;
    }
  }

  async unlisten(listener: PresenceListener, userIds: readonly string[]): Promise<void> {
    const gone: string[] = [];
    for (const userId of userIds) {
      const set = this.#listeners.get(userId);
      if (!set?.delete(listener) || set.size > 0) continue;
      this.#listeners.delete(userId);
      gone.push(this.#channelPrefix + userId);
    }
    if (gone.length > 0) await this.#subscriber.unsubscribe(...gone);
  }
}
