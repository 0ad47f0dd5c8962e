/**
 * A bag of entries with O(1) add, O(1) remove and O(1) uniform random pick: a dense
 * array where each entry remembers its index and removal swaps the last one into the
 * hole. It is what lets eviction and active expiry sample "a few random keys" (CA-11)
 * without walking the keyspace; a Map alone cannot be sampled without iterating it.
 *
 * Two bags exist: every key (`all`), and keys with a TTL (`ttl`), like Redis's
 * `db->dict` and `db->expires`. Each writes its own slot field of the entry.
 *
 * @example
 * const bag = new EntryBag("ttl");
 * bag.add(entry);      // entry.ttlSlot === 0
 * bag.pick(rng);       // entry
 * bag.remove(entry);   // entry.ttlSlot === -1
 */
import { int, type RandomSource } from "@casebook/kit/random";
import type { CacheEntry } from "./cache-entry.ts";

export type BagKind = "all" | "ttl";

export class EntryBag {
  readonly kind: BagKind;
  #items: CacheEntry[] = [];

  constructor(kind: BagKind) {
    this.kind = kind;
  }

  get size(): number {
    return this.#items.length;
  }

  add(entry: CacheEntry): void {
    const slot = this.#items.length;
    this.#items.push(entry);
    if (this.kind === "all") entry.allSlot = slot;
    else entry.ttlSlot = slot;
  }

  /** Removes an entry that is in this bag (a bug otherwise: asserted). */
  remove(entry: CacheEntry): void {
    const slot = this.kind === "all" ? entry.allSlot : entry.ttlSlot;
    const items = this.#items;
    if (items[slot] !== entry) throw new Error(`EntryBag(${this.kind}): entry is not at its slot ${slot}`);
    const last = items.pop()!;
    if (last !== entry) {
      items[slot] = last;
      if (this.kind === "all") last.allSlot = slot;
      else last.ttlSlot = slot;
    }
    if (this.kind === "all") entry.allSlot = -1;
    else entry.ttlSlot = -1;
  }

  /** A uniformly random entry, or undefined when empty. */
  pick(random: RandomSource): CacheEntry | undefined {
    const size = this.#items.length;
    return size === 0 ? undefined : this.#items[int(random, size)];
  }

  /** The entry at `slot` (for tests and iteration in bounded steps). */
  at(slot: number): CacheEntry | undefined {
    return this.#items[slot];
  }

  clear(): void {
    for (const entry of this.#items) {
      if (this.kind === "all") entry.allSlot = -1;
      else entry.ttlSlot = -1;
    }
    this.#items = [];
  }
}
