/**
 * Reassembles a message sent as `part` frames (CH-13: frames ≤ 32 KB, messages ≤ 128 KB):
 * parts keyed by clientMsgId, any order, the message complete when every index arrived.
 * Bounded per connection: at most MAX_PENDING messages in assembly and MAX_MESSAGE_BYTES of
 * text each; beyond either the oldest assembly is dropped (its client resends).
 *
 * @example
 * const parts = new PartAssembler();
 * parts.add({ clientMsgId, index: 1, count: 2, data: "lo" }); // undefined: waiting
 * parts.add({ clientMsgId, index: 0, count: 2, data: "hel" }); // "hello"
 */
import { MAX_MESSAGE_BYTES } from "../domain/conversation.ts";

export const MAX_PENDING = 4;

export class PartAssembler {
  readonly #pending = new Map<string, { count: number; parts: (string | undefined)[]; chars: number }>();

  add(part: { clientMsgId: string; index: number; count: number; data: string }): string | undefined {
    let entry = this.#pending.get(part.clientMsgId);
    if (!entry || entry.count !== part.count) {
      entry = { count: part.count, parts: new Array(part.count).fill(undefined), chars: 0 };
      this.#pending.set(part.clientMsgId, entry);
      while (this.#pending.size > MAX_PENDING) this.#pending.delete(this.#pending.keys().next().value!);
    }
    if (entry.parts[part.index] === undefined) entry.chars += part.data.length;
    entry.parts[part.index] = part.data;
    if (entry.chars > MAX_MESSAGE_BYTES) {
      this.#pending.delete(part.clientMsgId);
      return undefined;
    }
    if (entry.parts.some((p) => p === undefined)) return undefined;
    this.#pending.delete(part.clientMsgId);
    return entry.parts.join("");
  }
}
