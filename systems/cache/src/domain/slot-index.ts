/**
 * Keys grouped by hash slot, kept beside the keyspace (Redis keeps one dict per slot):
 * CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT answer from it in O(1) and O(count), so a
 * live reshard walks only the slot it moves, never the whole keyspace, and SCAN's cursor
 * is a slot number (scan-command.ts). The keyspace keeps it exact: every key created or
 * removed (deleted, expired, evicted, flushed) passes through `add` / `remove` / `clear`.
 *
 * @example
 * const index = new SlotIndex();
 * index.add("{user:1}:a"); index.add("{user:1}:b");
 * index.count(keySlot("user:1"));        // 2
 * index.keys(keySlot("user:1"), 10);     // ["{user:1}:a", "{user:1}:b"]
 */
import { keySlot } from "@casebook/kit/cluster-slot";
import { SLOT_COUNT } from "./slot-ranges.ts";

export class SlotIndex {
  #slots: Array<Set<string> | undefined> = new Array(SLOT_COUNT);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(key: string): void {
    const slot = keySlot(key);
    let keys = this.#slots[slot];
    if (keys === undefined) {
      keys = new Set();
      this.#slots[slot] = keys;
    }
    if (keys.has(key)) return;
    keys.add(key);
    this.#size += 1;
  }

  remove(key: string): void {
    const slot = keySlot(key);
    const keys = this.#slots[slot];
    if (keys === undefined || !keys.delete(key)) return;
    this.#size -= 1;
    // Free the set of an emptied slot: after a reshard the source holds thousands of them.
    if (keys.size === 0) this.#slots[slot] = undefined;
  }

  clear(): void {
    this.#slots = new Array(SLOT_COUNT);
    this.#size = 0;
  }

  count(slot: number): number {
    return this.#slots[slot]?.size ?? 0;
  }

  /** Up to `max` keys of `slot`, in insertion order. */
  keys(slot: number, max: number): string[] {
    const keys = this.#slots[slot];
    if (keys === undefined || max <= 0) return [];
    const out: string[] = [];
    for (const key of keys) {
      out.push(key);
      if (out.length >= max) break;
    }
    return out;
  }

  /** Every key, slot by slot (full sync walks this). */
  *all(): Generator<string> {
    for (const keys of this.#slots) if (keys !== undefined) yield* keys;
  }
}
