/**
 * The embedded stand-in for Redis's data: strings, hashes, sorted sets and lists,
 * each key with an optional expiry in ms, time from an injected Clock. Its methods
 * are named and behave like the Redis commands they twin (`incrBy` = INCRBY, empty
 * containers vanish, WRONGTYPE on a type clash, `now > expiresAt` means expired), so
 * a script's TypeScript twin reads line for line like its Lua.
 *
 * Atomicity comes from `atomic(fn)`: `fn` runs synchronously, so no other call can
 * interleave (JavaScript's event loop gives what Redis's single thread gives), and the
 * clock is frozen for its duration, as Redis freezes time while a script runs.
 *
 * Expired keys vanish lazily (every access checks) and actively: each `atomic` call
 * first removes up to `sweepPerCall` due keys, earliest first. With no calls nothing
 * sweeps; memory stays bounded by `maxKeys` regardless.
 *
 * @example
 * const keyspace = new InProcessKeyspace({ clock: new ManualClock(0), maxKeys: 10_000 });
 * keyspace.atomic(() => keyspace.incrBy("hits", 1)); // 1
 */
import type { Clock } from "@casebook/kit/clock";
import { ExpiryQueue } from "./expiry-queue.ts";
import { redisErrors } from "./redis-errors.ts";
import { clampRanks, type ScoreBound, SortedSet } from "./sorted-set.ts";

export interface InProcessKeyspaceOptions {
  clock: Clock;
  /** Bound on keys held; a call that finds the store full (after sweeping) fails with REDIS_KEYSPACE_FULL. */
  maxKeys?: number;
  /** Bound on fields/members/items of one hash, sorted set or list. */
  maxElementsPerKey?: number;
  /** Bound on due keys removed by the active sweep at the start of each atomic call. */
  sweepPerCall?: number;
}

export const keyspaceDefaults = {
  maxKeys: 1_000_000,
  maxElementsPerKey: 1_000_000,
  sweepPerCall: 20,
} as const;

interface ValueTypes {
  string: string;
  hash: Map<string, string>;
  zset: SortedSet;
  list: string[];
}

export type KeyType = keyof ValueTypes;

type Stored =
  | { type: "string"; value: string }
  | { type: "hash"; value: Map<string, string> }
  | { type: "zset"; value: SortedSet }
  | { type: "list"; value: string[] };

type ValueOf<T extends KeyType> = ValueTypes[T];

interface Entry {
  data: Stored;
  expiresAtMs: number | undefined;
}

export interface SetOptions {
  /** Expire after this many ms (SET … PX). */
  pxMs?: number;
  /** Only set when the key does not exist (SET … NX). */
  nx?: boolean;
  /** Only set when the key exists (SET … XX). */
  xx?: boolean;
  /** Keep the key's current expiry (SET … KEEPTTL); otherwise SET clears it, as Redis does. */
  keepTtl?: boolean;
}

export class InProcessKeyspace {
  readonly #clock: Clock;
  readonly #maxKeys: number;
  readonly #maxElements: number;
  readonly #sweepPerCall: number;
  readonly #entries = new Map<string, Entry>();
  readonly #expiry = new ExpiryQueue();
  #keysWithTtl = 0;
  #frozenNowMs: number | undefined;

  constructor(options: InProcessKeyspaceOptions) {
    this.#clock = options.clock;
    this.#maxKeys = options.maxKeys ?? keyspaceDefaults.maxKeys;
    this.#maxElements = options.maxElementsPerKey ?? keyspaceDefaults.maxElementsPerKey;
    this.#sweepPerCall = options.sweepPerCall ?? keyspaceDefaults.sweepPerCall;
  }

  /**
   * Runs `fn` as one atomic step over `keys`: time frozen and due keys swept first. When
   * the step's missing keys would not fit under `maxKeys` it is refused up front with
   * REDIS_KEYSPACE_FULL, before it writes anything (as Redis refuses a script under OOM),
   * so a full store still serves calls on the keys it holds. A step must touch only `keys`
   * (the cluster rule for scripts), which is what makes that check exact.
   */
  atomic<T>(fn: () => T, keys: readonly string[] = []): T {
    if (this.#frozenNowMs !== undefined) return fn(); // nested: already atomic
    this.#frozenNowMs = this.#clock.nowMs();
    try {
      this.sweepExpired(this.#sweepPerCall);
      this.#assertRoomFor(keys);
      return fn();
    } finally {
      this.#frozenNowMs = undefined;
    }
  }

  /** The store's time in ms: frozen inside `atomic`, else the clock's. */
  nowMs(): number {
    return this.#frozenNowMs ?? this.#clock.nowMs();
  }

  /** Like Redis TIME: [unix seconds, microseconds within the second]. */
  time(): [seconds: number, micros: number] {
    const nowMs = this.nowMs();
    const seconds = Math.floor(nowMs / 1000);
    return [seconds, Math.floor((nowMs - seconds * 1000) * 1000)];
  }

  /** Removes up to `maxChecks` due entries, earliest first; returns how many keys it deleted. */
  sweepExpired(maxChecks: number): number {
    const nowMs = this.nowMs();
    let deleted = 0;
    for (let checks = 0; checks < maxChecks; checks++) {
      const due = this.#expiry.popDue(nowMs);
      if (!due) break;
      const entry = this.#entries.get(due.key);
      if (entry?.expiresAtMs === due.atMs) {
        this.#delete(due.key);
        deleted++;
      }
    }
    return deleted;
  }

  /** Gauges for /metrics: keys held, keys with a TTL, and expiry-heap entries (live + stale). */
  stats(): { keys: number; keysWithTtl: number; expiryEntries: number } {
    return { keys: this.#entries.size, keysWithTtl: this.#keysWithTtl, expiryEntries: this.#expiry.size };
  }

  /** Keys held, including expired ones not yet swept (as Redis DBSIZE counts). */
  dbsize(): number {
    return this.#entries.size;
  }

  exists(key: string): boolean {
    return this.#live(key) !== undefined;
  }

  type(key: string): KeyType | "none" {
    return this.#live(key)?.data.type ?? "none";
  }

  del(...keys: string[]): number {
    let deleted = 0;
    for (const key of keys) if (this.#live(key) && this.#delete(key)) deleted++;
    return deleted;
  }

  // --- expiry ---------------------------------------------------------------------------

  /** PEXPIRE: true when the key exists; a ttl <= 0 deletes it at once, as in Redis. */
  pexpire(key: string, ttlMs: number): boolean {
    return this.pexpireAt(key, this.nowMs() + ttlMs);
  }

  pexpireAt(key: string, atMs: number): boolean {
    if (!Number.isFinite(atMs)) throw new RangeError("ERR invalid expire time in 'pexpire' command");
    const entry = this.#live(key);
    if (!entry) return false;
    if (atMs <= this.nowMs()) this.#delete(key);
    else this.#setExpiry(key, entry, atMs);
    return true;
  }

  /** PTTL: ms left, -1 when the key has no expiry, -2 when it does not exist. */
  pttl(key: string): number {
    const entry = this.#live(key);
    if (!entry) return -2;
    return entry.expiresAtMs === undefined ? -1 : Math.max(0, entry.expiresAtMs - this.nowMs());
  }

  persist(key: string): boolean {
    const entry = this.#live(key);
    if (entry?.expiresAtMs === undefined) return false;
    this.#setExpiry(key, entry, undefined);
    return true;
  }

  // --- strings --------------------------------------------------------------------------

  get(key: string): string | null {
    return this.#read(key, "string") ?? null;
  }

  /** SET with NX/XX/PX/KEEPTTL; false when NX or XX prevented the write. */
  set(key: string, value: string | number, options: SetOptions = {}): boolean {
    const current = this.#live(key);
    if ((options.nx && current) || (options.xx && !current)) return false;
    if (options.pxMs !== undefined && !(Number.isInteger(options.pxMs) && options.pxMs > 0)) {
      throw new RangeError("ERR invalid expire time in 'set' command");
    }
    const keptAtMs = options.keepTtl ? current?.expiresAtMs : undefined;
    const entry = this.#put(key, { type: "string", value: String(value) });
    const atMs = options.pxMs !== undefined ? this.nowMs() + options.pxMs : keptAtMs;
    this.#setExpiry(key, entry, atMs);
    return true;
  }

  /** INCRBY: the new value; REDIS_NOT_INTEGER when the value or result is not a 64-bit-safe integer. */
  incrBy(key: string, by: number): number {
    const current = this.#read(key, "string");
    const next = parseInteger(current ?? "0") + by;
    if (!Number.isSafeInteger(by) || !Number.isSafeInteger(next))
      throw redisErrors.create("REDIS_NOT_INTEGER");
    const entry = this.#live(key);
    if (entry) entry.data = { type: "string", value: String(next) };
    else this.#put(key, { type: "string", value: String(next) });
    return next;
  }

  // --- hashes ---------------------------------------------------------------------------

  hget(key: string, field: string): string | null {
    return this.#read(key, "hash")?.get(field) ?? null;
  }

  /** HSET key field value [field value …]: how many fields were new. */
  hset(key: string, fields: Record<string, string | number>): number {
    const hash = this.#write(key, "hash", () => new Map());
    let added = 0;
    for (const [field, value] of Object.entries(fields)) {
      if (!hash.has(field)) {
        this.#assertElements(key, hash.size);
        added++;
      }
      hash.set(field, String(value));
    }
    this.#dropIfEmpty(key, hash.size);
    return added;
  }

  hgetall(key: string): Record<string, string> {
    return Object.fromEntries(this.#read(key, "hash") ?? []);
  }

  hdel(key: string, ...fields: string[]): number {
    const hash = this.#read(key, "hash");
    if (!hash) return 0;
    const deleted = fields.filter((field) => hash.delete(field)).length;
    this.#dropIfEmpty(key, hash.size);
    return deleted;
  }

  hincrBy(key: string, field: string, by: number): number {
    const current = this.#read(key, "hash")?.get(field);
    const next = parseInteger(current ?? "0") + by;
    if (!Number.isSafeInteger(by) || !Number.isSafeInteger(next))
      throw redisErrors.create("REDIS_NOT_INTEGER");
    this.hset(key, { [field]: next });
    return next;
  }

  hlen(key: string): number {
    return this.#read(key, "hash")?.size ?? 0;
  }

  // --- sorted sets ----------------------------------------------------------------------

  /** ZADD key score member: 1 when the member is new, 0 when only its score changed. */
  zadd(key: string, score: number, member: string): number {
    const set = this.#write(key, "zset", () => new SortedSet());
    if (set.score(member) === undefined) this.#assertElements(key, set.size);
    try {
      return set.add(member, score) ? 1 : 0;
    } finally {
      this.#dropIfEmpty(key, set.size);
    }
  }

  zscore(key: string, member: string): number | null {
    return this.#read(key, "zset")?.score(member) ?? null;
  }

  zrem(key: string, ...members: string[]): number {
    const set = this.#read(key, "zset");
    if (!set) return 0;
    const removed = members.filter((member) => set.remove(member)).length;
    this.#dropIfEmpty(key, set.size);
    return removed;
  }

  zcard(key: string): number {
    return this.#read(key, "zset")?.size ?? 0;
  }

  zcount(key: string, min: ScoreBound, max: ScoreBound): number {
    return this.#read(key, "zset")?.countByScore(min, max) ?? 0;
  }

  /** ZRANGE by rank, both ends inclusive, negative from the end. */
  zrange(key: string, start: number, stop: number): string[] {
    return this.#read(key, "zset")?.rangeByRank(start, stop) ?? [];
  }

  zrangeByScore(
    key: string,
    min: ScoreBound,
    max: ScoreBound,
    limit?: { offset: number; count: number },
  ): string[] {
    return this.#read(key, "zset")?.rangeByScore(min, max, limit?.offset, limit?.count) ?? [];
  }

  zremRangeByScore(key: string, min: ScoreBound, max: ScoreBound): number {
    const set = this.#read(key, "zset");
    if (!set) return 0;
    const removed = set.removeByScore(min, max);
    this.#dropIfEmpty(key, set.size);
    return removed;
  }

  // --- lists ----------------------------------------------------------------------------

  /** LPUSH key a b c leaves the list c b a …, as Redis does; returns the new length. */
  lpush(key: string, ...values: (string | number)[]): number {
    if (values.length === 0) throw new RangeError("ERR wrong number of arguments for 'lpush' command");
    const list = this.#write(key, "list", () => []);
    this.#assertElements(key, list.length + values.length - 1);
    list.unshift(...values.map(String).reverse());
    return list.length;
  }

  rpush(key: string, ...values: (string | number)[]): number {
    if (values.length === 0) throw new RangeError("ERR wrong number of arguments for 'rpush' command");
    const list = this.#write(key, "list", () => []);
    this.#assertElements(key, list.length + values.length - 1);
    list.push(...values.map(String));
    return list.length;
  }

  lpop(key: string): string | null {
    return this.#pop(key, (list) => list.shift());
  }

  rpop(key: string): string | null {
    return this.#pop(key, (list) => list.pop());
  }

  llen(key: string): number {
    return this.#read(key, "list")?.length ?? 0;
  }

  lrange(key: string, start: number, stop: number): string[] {
    const list = this.#read(key, "list") ?? [];
    const [from, to] = clampRanks(start, stop, list.length);
    return list.slice(from, to + 1);
  }

  /** LTRIM: keep only [start, stop]; the key vanishes when nothing is left. */
  ltrim(key: string, start: number, stop: number): void {
    const list = this.#read(key, "list");
    if (!list) return;
    const [from, to] = clampRanks(start, stop, list.length);
    const kept = from > to ? [] : list.slice(from, to + 1);
    list.splice(0, list.length, ...kept);
    this.#dropIfEmpty(key, list.length);
  }

  // --- internals ------------------------------------------------------------------------

  /** The key's entry, deleting it first when expired (lazy expiry: now > expiresAt). */
  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry?.expiresAtMs !== undefined && this.nowMs() > entry.expiresAtMs) {
      this.#delete(key);
      return undefined;
    }
    return entry;
  }

  /** The key's value when it holds `type`; undefined when missing; WRONGTYPE otherwise. */
  #read<T extends KeyType>(key: string, type: T): ValueOf<T> | undefined {
    const entry = this.#live(key);
    if (!entry) return undefined;
    if (entry.data.type !== type) throw redisErrors.create("REDIS_WRONG_TYPE", { fields: { key } });
    return entry.data.value as ValueOf<T>;
  }

  /** The key's container, created empty (no expiry) when missing. */
  #write<T extends KeyType>(key: string, type: T, create: () => ValueOf<T>): ValueOf<T> {
    const existing = this.#read(key, type);
    if (existing !== undefined) return existing as ValueOf<T>;
    const value = create();
    this.#put(key, { type, value } as Stored);
    return value;
  }

  #put(key: string, data: Stored): Entry {
    const current = this.#entries.get(key);
    if (current) {
      current.data = data;
      return current;
    }
    // Inside atomic() room was checked up front for the step's keys; outside it, per key.
    if (this.#frozenNowMs === undefined) this.#assertRoomFor([key]);
    const entry: Entry = { data, expiresAtMs: undefined };
    this.#entries.set(key, entry);
    return entry;
  }

  #delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (!entry) return false;
    if (entry.expiresAtMs !== undefined) this.#keysWithTtl--;
    return this.#entries.delete(key);
  }

  #setExpiry(key: string, entry: Entry, atMs: number | undefined): void {
    if (entry.expiresAtMs === undefined && atMs !== undefined) this.#keysWithTtl++;
    if (entry.expiresAtMs !== undefined && atMs === undefined) this.#keysWithTtl--;
    // The same expiry again (a window-aligned TTL rewritten on every call) is already queued.
    const unchanged = entry.expiresAtMs === atMs;
    entry.expiresAtMs = atMs;
    if (atMs === undefined || unchanged) return;
    this.#expiry.push(atMs, key);
    // Each TTL change leaves a stale heap entry; rebuild once stale ones dominate,
    // keeping one entry per key so duplicates can never keep the heap large.
    if (this.#expiry.size > 2 * this.#keysWithTtl + 1_024) {
      const kept = new Set<string>();
      this.#expiry.compact(({ key: k, atMs: at }) => {
        if (kept.has(k) || this.#entries.get(k)?.expiresAtMs !== at) return false;
        kept.add(k);
        return true;
      });
    }
  }

  #dropIfEmpty(key: string, size: number): void {
    if (size === 0) this.#delete(key);
  }

  #pop(key: string, take: (list: string[]) => string | undefined): string | null {
    const list = this.#read(key, "list");
    if (!list) return null;
    const value = take(list) ?? null;
    this.#dropIfEmpty(key, list.length);
    return value;
  }

  /** Throws REDIS_KEYSPACE_FULL unless the missing ones of `keys` fit, after sweeping all due keys. */
  #assertRoomFor(keys: readonly string[]): void {
    const missing = () => new Set(keys.filter((key) => !this.#entries.has(key))).size;
    if (this.#entries.size + missing() <= this.#maxKeys) return;
    // Bounded by the expiry heap's size: each check pops one entry.
    this.sweepExpired(Number.POSITIVE_INFINITY);
    if (this.#entries.size + missing() <= this.#maxKeys) return;
    throw redisErrors.create("REDIS_KEYSPACE_FULL", {
      detail: `The in-process store holds its maximum of ${this.#maxKeys} keys; raise maxKeys or use Redis.`,
      fields: { maxKeys: this.#maxKeys },
    });
  }

  #assertElements(key: string, sizeBefore: number): void {
    if (sizeBefore < this.#maxElements) return;
    throw redisErrors.create("REDIS_KEYSPACE_FULL", {
      detail: `Key ${key} holds its maximum of ${this.#maxElements} elements; raise maxElementsPerKey or use Redis.`,
      fields: { key, maxElementsPerKey: this.#maxElements },
    });
  }
}

function parseInteger(text: string): number {
  const value = /^-?\d{1,19}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw redisErrors.create("REDIS_NOT_INTEGER");
  return value;
}
