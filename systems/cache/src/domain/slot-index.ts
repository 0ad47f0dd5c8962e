/**
 * Keys grouped by hash slot (Redis keeps one dict per slot): CLUSTER COUNTKEYSINSLOT and
 * GETKEYSINSLOT answer from it in O(1) and O(count), so a live reshard walks only the slot it
 * moves, never the whole keyspace, and SCAN's cursor is a slot number (scan-command.ts).
 * It is a read-only view of the keyspace's records, where each slot's keys are a linked list
 * kept exact on every key created or removed (key-records.ts).
 *
 * @example
 * const index = keyspace.slotIndex;        // after SET {user:1}:a, SET {user:1}:b
 * index.count(keySlot("user:1"));          // 2
 * index.keys(keySlot("user:1"), 10);       // ["{user:1}:a", "{user:1}:b"]
 */
import type { KeyRecords } from "./key-records.ts";
import { SLOT_COUNT } from "./slot-ranges.ts";

export class SlotIndex {
  readonly #records: KeyRecords;

  constructor(records: KeyRecords) {
    this.#records = records;
  }

  get size(): number {
    return this.#records.size;
  }

  count(slot: number): number {
    return this.#records.slotCount(slot);
  }

  /** Up to `max` keys of `slot`, in insertion order. */
  keys(slot: number, max: number): string[] {
    return max <= 0 ? [] : this.#records.slotKeys(slot, max);
  }

  /** Every key, slot by slot (full sync walks this), each slot's keys read before they are yielded. */
  *all(): Generator<string> {
    for (let slot = 0; slot < SLOT_COUNT; slot++) {
      const count = this.#records.slotCount(slot);
      if (count > 0) yield* this.#records.slotKeys(slot, count);
    }
  }
}
