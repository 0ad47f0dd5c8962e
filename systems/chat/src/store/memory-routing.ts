/**
 * The routing bus in process (the embedded twin of `redis-routing.ts`): gateways of one
 * process, or a test. Delivery is synchronous to each subscriber; `publish` resolves with
 * the number of subscribers, 0 meaning nobody holds that gateway any more ("gone").
 *
 * @example
 * const bus = new MemoryRouting();
 */
import type { RoutedEnvelope, RoutingBus } from "../domain/routing.ts";

export class MemoryRouting implements RoutingBus {
  readonly #handlers = new Map<string, Set<(envelope: RoutedEnvelope) => void>>();

  publish(gatewayId: string, envelope: RoutedEnvelope): Promise<number> {
    return this.publishMany(gatewayId, [envelope]);
  }

  async publishMany(gatewayId: string, envelopes: readonly RoutedEnvelope[]): Promise<number> {
    const handlers = this.#handlers.get(gatewayId);
    if (!handlers) return 0;
    // Cloned like a wire round trip, so no subscriber shares an object with the publisher.
    const copies = JSON.parse(JSON.stringify(envelopes)) as RoutedEnvelope[];
    for (const handler of handlers) for (const copy of copies) handler(copy);
    return handlers.size;
  }

  async subscribe(gatewayId: string, handler: (envelope: RoutedEnvelope) => void): Promise<void> {
    const handlers = this.#handlers.get(gatewayId) ?? new Set();
    handlers.add(handler);
    this.#handlers.set(gatewayId, handlers);
  }

  async close(): Promise<void> {
    this.#handlers.clear();
  }
}
