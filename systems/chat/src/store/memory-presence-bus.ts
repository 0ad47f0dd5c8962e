/**
 * The presence bus in process (the embedded twin of `redis-presence-bus.ts`): the gateways of
 * one process, or a test. A poke reaches every listener of that user, synchronously.
 *
 * @example
 * const bus = new MemoryPresenceBus();
 * await bus.listen(onPoke, ["ana"]);
 * await bus.poke("ana"); // onPoke("ana")
 */
import type { PresenceBus, PresenceListener } from "../domain/presence.ts";

export class MemoryPresenceBus implements PresenceBus {
  readonly #listeners = new Map<string, Set<PresenceListener>>();

  async poke(userId: string): Promise<void> {
    for (const listener of this.#listeners.get(userId) ?? []) listener(userId);
  }

  async listen(listener: PresenceListener, userIds: readonly string[]): Promise<void> {
    for (const userId of userIds) {
      const set = this.#listeners.get(userId) ?? new Set<PresenceListener>();
      set.add(listener);
      this.#listeners.set(userId, set);
    }
  }

  async unlisten(listener: PresenceListener, userIds: readonly string[]): Promise<void> {
    for (const userId of userIds) {
      const set = this.#listeners.get(userId);
      set?.delete(listener);
      if (set?.size === 0) this.#listeners.delete(userId);
    }
  }
}
