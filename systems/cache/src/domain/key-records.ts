/**
 * The keyspace's records as struct-of-arrays (issue 15): one dense record id per key, its
 * fields in typed arrays (key and value references and lengths, expiry, access field, TTL-bag
 * slot, hash-slot list links), its key's and value's bytes in the `ValueArena` off the V8 heap,
 * found through `KeyTable` (open addressing, seeded hash). Per key the V8 heap holds nothing:
 * no key or value string, no entry object, no Map entry. A key is decoded into a string only
 * when one is asked for (SCAN, eviction samples, the replication stream).
 *
 * Ids are dense (0..size−1), so a uniformly random id is a uniformly random key: eviction
 * and active expiry sample in O(1) (Redis's dictGetRandomKey). Removal moves the last record
 * into the hole, so an id is valid only until the next removal; callers keep keys across
 * removals, never ids. Keys with a TTL are a second dense bag (`ttlIds`), like Redis's
 * `db->expires`. Each hash slot's keys are a doubly linked list through the records (`slotNext`,
 * `slotPrev`), in insertion order: the per-slot index SCAN, GETKEYSINSLOT and full syncs walk
 * (slot-index.ts), at 10 B per key instead of a `Set` entry per key.
 *
 * @example
 * const records = new KeyRecords();
 * const id = records.add("user:1", "Ada", lruClock(now));
 * records.value(id);               // "Ada"
 * records.setExpiresAt(id, now + 1_000);
 * records.count("ttl");            // 1
 * records.remove(id);              // frees the value's slot
 */
import { keySlot } from "@casebook/kit/cluster-slot";
import { int, type RandomSource } from "@casebook/kit/random";
import { NO_EXPIRY } from "./cache-entry.ts";
import type { CandidateKeys, EvictionCandidates } from "./eviction-policy.ts";
import { KeyTable } from "./key-table.ts";
import { SLOT_COUNT } from "./slot-ranges.ts";
import { slotBytes, ValueArena } from "./value-arena.ts";

const INITIAL_CAPACITY = 1_024;

type Field = Uint16Array | Uint32Array | Int32Array | Float64Array;

function grown<T extends Field>(array: T, capacity: number): T {
  const next = new (array.constructor as new (length: number) => T)(capacity);
  next.set(array);
  return next;
}

export class KeyRecords implements EvictionCandidates {
  #size = 0;
  readonly #table: KeyTable;
  #keyRef = new Uint32Array(INITIAL_CAPACITY);
  #keyLength = new Uint32Array(INITIAL_CAPACITY);
  #valueRef = new Uint32Array(INITIAL_CAPACITY);
  #valueLength = new Uint32Array(INITIAL_CAPACITY);
  #expiresAt = new Float64Array(INITIAL_CAPACITY);
  #access = new Int32Array(INITIAL_CAPACITY);
  /** Index in `#ttlIds`, −1 when the key has no TTL. */
  #ttlSlot = new Int32Array(INITIAL_CAPACITY);
  #ttlIds = new Int32Array(INITIAL_CAPACITY);
  #ttlCount = 0;
  /** Hash slot of each record, and its neighbours in that slot's list (−1: none). */
  #slot = new Uint16Array(INITIAL_CAPACITY);
  #slotNext = new Int32Array(INITIAL_CAPACITY);
  #slotPrev = new Int32Array(INITIAL_CAPACITY);
  #slotHead = new Int32Array(SLOT_COUNT).fill(-1);
  #slotTail = new Int32Array(SLOT_COUNT).fill(-1);
  #slotCount = new Int32Array(SLOT_COUNT);
  #arena = new ValueArena();

  /** `seed` seeds the key hash (draw it at random per process: see key-table.ts). */
  constructor(seed: number) {
    this.#table = new KeyTable(seed, (id, key) => this.#keyEquals(id, key));
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes of value chunks the arena holds (free slots included). */
  get arenaBytes(): number {
    return this.#arena.reservedBytes;
  }

  /** Bytes of the typed arrays (capacity, not just size). */
  get fieldBytes(): number {
    const arrays = [...this.#fields(), this.#slotHead, this.#slotTail, this.#slotCount];
    return arrays.reduce((bytes, array) => bytes + array.byteLength, this.#table.bytes);
  }

  /** The record id of `key`, or −1. */
  idOf(key: string): number {
    return this.#table.find(key, this.#table.hashOf(key));
  }

  /** Every key, by record id (not insertion order), decoded once the walk reaches it. */
  *keys(): Generator<string> {
    for (let id = 0; id < this.#size; id++) yield this.keyOf(id);
  }

  add(key: string, value: string, access: number): number {
    const id = this.#size;
    if (id === this.#valueRef.length) this.#grow(id * 2);
    this.#size += 1;
    this.#keyRef[id] = this.#arena.store(key);
    this.#keyLength[id] = key.length;
    this.#table.insert(id, this.#table.hashOf(key));
    this.#valueRef[id] = this.#arena.store(value);
    this.#valueLength[id] = value.length;
    this.#expiresAt[id] = NO_EXPIRY;
    this.#access[id] = access;
    this.#ttlSlot[id] = -1;
    this.#linkSlot(id, keySlot(key));
    return id;
  }

  /** Keys in hash slot `slot`. */
  slotCount(slot: number): number {
    return this.#slotCount[slot]!;
  }

  /** Up to `max` keys of hash slot `slot`, in insertion order. */
  slotKeys(slot: number, max: number): string[] {
    const keys: string[] = [];
    for (let id = this.#slotHead[slot]!; id >= 0 && keys.length < max; id = this.#slotNext[id]!) {
      keys.push(this.keyOf(id));
    }
    return keys;
  }

  /** Removes record `id`, freeing its value; the last record takes its id. */
  remove(id: number): void {
    this.setExpiresAt(id, NO_EXPIRY);
    this.#arena.free(this.#valueRef[id]!, this.#valueLength[id]!);
    this.#arena.free(this.#keyRef[id]!, this.#keyLength[id]!);
    this.#table.delete(id);
    this.#unlinkSlot(id);
    const last = --this.#size;
    if (id === last) return;
    this.#relinkSlot(last, id);
    this.#table.move(last, id);
    this.#keyRef[id] = this.#keyRef[last]!;
    this.#keyLength[id] = this.#keyLength[last]!;
    this.#valueRef[id] = this.#valueRef[last]!;
    this.#valueLength[id] = this.#valueLength[last]!;
    this.#expiresAt[id] = this.#expiresAt[last]!;
    this.#access[id] = this.#access[last]!;
    const ttlSlot = this.#ttlSlot[last]!;
    this.#ttlSlot[id] = ttlSlot;
    if (ttlSlot >= 0) this.#ttlIds[ttlSlot] = id;
  }

  keyOf(id: number): string {
    return this.#arena.read(this.#keyRef[id]!, this.#keyLength[id]!);
  }

  keyLength(id: number): number {
    return this.#keyLength[id]!;
  }

  value(id: number): string {
    return this.#arena.read(this.#valueRef[id]!, this.#valueLength[id]!);
  }

  valueLength(id: number): number {
    return this.#valueLength[id]!;
  }

  /** Replaces the value: in place when the new one needs the same slot size. */
  setValue(id: number, value: string): void {
    const oldLength = this.#valueLength[id]!;
    // A large value's chunk is its slotBytes too, so the same test holds for it.
    if (slotBytes(oldLength) !== slotBytes(value.length)) {
      this.#arena.free(this.#valueRef[id]!, oldLength);
      this.#valueRef[id] = this.#arena.store(value);
    } else {
      this.#arena.overwrite(this.#valueRef[id]!, value);
    }
    this.#valueLength[id] = value.length;
  }

  accessOf(id: number): number {
    return this.#access[id]!;
  }

  setAccess(id: number, access: number): void {
    this.#access[id] = access;
  }

  expiresAtOf(id: number): number {
    return this.#expiresAt[id]!;
  }

  /** Sets or clears (`NO_EXPIRY`) the expiry, keeping the TTL bag in step. */
  setExpiresAt(id: number, expiresAtMs: number): void {
    const slot = this.#ttlSlot[id]!;
    if (expiresAtMs === NO_EXPIRY && slot >= 0) {
      const lastId = this.#ttlIds[--this.#ttlCount]!;
      this.#ttlIds[slot] = lastId;
      this.#ttlSlot[lastId] = slot;
      this.#ttlSlot[id] = -1;
    } else if (expiresAtMs !== NO_EXPIRY && slot < 0) {
      this.#ttlIds[this.#ttlCount] = id;
      this.#ttlSlot[id] = this.#ttlCount++;
    }
    this.#expiresAt[id] = expiresAtMs;
  }

  count(keys: CandidateKeys): number {
    return keys === "all" ? this.#size : this.#ttlCount;
  }

  sample(keys: CandidateKeys, random: RandomSource): number {
    return keys === "all" ? int(random, this.#size) : this.#ttlIds[int(random, this.#ttlCount)]!;
  }

  holds(key: string, keys: CandidateKeys): boolean {
    const id = this.idOf(key);
    return id >= 0 && (keys === "all" || this.#ttlSlot[id]! >= 0);
  }

  clear(): void {
    this.#size = 0;
    this.#table.clear();
    this.#ttlCount = 0;
    this.#arena.clear();
    this.#slotHead.fill(-1);
    this.#slotTail.fill(-1);
    this.#slotCount.fill(0);
    this.#grow(INITIAL_CAPACITY, false);
  }

  #keyEquals(id: number, key: string): boolean {
    return this.#keyLength[id] === key.length && this.#arena.equals(this.#keyRef[id]!, key);
  }

  #linkSlot(id: number, slot: number): void {
    const tail = this.#slotTail[slot]!;
    this.#slot[id] = slot;
    this.#slotPrev[id] = tail;
    this.#slotNext[id] = -1;
    if (tail >= 0) this.#slotNext[tail] = id;
    else this.#slotHead[slot] = id;
    this.#slotTail[slot] = id;
    this.#slotCount[slot] = this.#slotCount[slot]! + 1;
  }

  #unlinkSlot(id: number): void {
    const slot = this.#slot[id]!;
    const prev = this.#slotPrev[id]!;
    const next = this.#slotNext[id]!;
    if (prev >= 0) this.#slotNext[prev] = next;
    else this.#slotHead[slot] = next;
    if (next >= 0) this.#slotPrev[next] = prev;
    else this.#slotTail[slot] = prev;
    this.#slotCount[slot] = this.#slotCount[slot]! - 1;
  }

  /** Record `from` moves to id `to`: its neighbours (or its slot's head / tail) now point at `to`. */
  #relinkSlot(from: number, to: number): void {
    const slot = this.#slot[from]!;
    const prev = this.#slotPrev[from]!;
    const next = this.#slotNext[from]!;
    this.#slot[to] = slot;
    this.#slotPrev[to] = prev;
    this.#slotNext[to] = next;
    if (prev >= 0) this.#slotNext[prev] = to;
    else this.#slotHead[slot] = to;
    if (next >= 0) this.#slotPrev[next] = to;
    else this.#slotTail[slot] = to;
  }

  #fields(): Field[] {
    return [
      this.#keyRef,
      this.#keyLength,
      this.#valueRef,
      this.#valueLength,
      this.#expiresAt,
      this.#access,
      this.#ttlSlot,
      this.#ttlIds,
      this.#slot,
      this.#slotNext,
      this.#slotPrev,
    ];
  }

  #grow(capacity: number, keep = true): void {
    const resize = <T extends Field>(array: T): T =>
      keep ? grown(array, capacity) : (new (array.constructor as new (length: number) => T)(capacity) as T);
    this.#keyRef = resize(this.#keyRef);
    this.#keyLength = resize(this.#keyLength);
    this.#valueRef = resize(this.#valueRef);
    this.#valueLength = resize(this.#valueLength);
    this.#expiresAt = resize(this.#expiresAt);
    this.#access = resize(this.#access);
    this.#ttlSlot = resize(this.#ttlSlot);
    this.#ttlIds = resize(this.#ttlIds);
    this.#slot = resize(this.#slot);
    this.#slotNext = resize(this.#slotNext);
    this.#slotPrev = resize(this.#slotPrev);
  }
}
