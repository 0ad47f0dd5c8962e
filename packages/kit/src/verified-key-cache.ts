/**
 * A bounded in-process cache of verified API keys → what they stand for (a user, a tenant and
 * its limits): the store's check (a row looked up by prefix, a constant-time hash compare,
 * expiry, revocation) runs once per key per TTL per process instead of on every request.
 * Feed's reads, the LLM gateway's requests and metrics' remote-write all check a key per call.
 *
 * **Refresh ahead.** A key in use never waits for the store after its first request:
 * `refreshDue()` (every `refreshAfterMs / 20` once `startRefreshing()` runs) re-checks, in the
 * background and in batches of `refreshBatch`, each entry past its refresh point whose key was
 * used within the last TTL. An entry's refresh point is drawn at its check, between
 * `refreshAfterMs` (half the TTL by default) and that plus `refreshJitter` of the time left to
 * the TTL: keys first checked together — a warm-up, a restart, a burst of new clients — are
 * re-checked apart, not all in one tick (feed's bench, issue 20: the ~2,000 keys of its
 * warm-up were re-checked in one batch of 13–18 ms, start to end, every cycle of the run). Without it every key's entry
 * expired on the request path once per TTL, and every request arriving then waited for that
 * check: the LLM gateway bench's 50 streams, which restart together every ~5.1 s against a
 * 5 s TTL, all waited on one check per burst (8–141 ms measured at load 8–12). A key unused
 * for a TTL is re-checked at most once more, then left to expire.
 *
 * The bound this buys is stated, not hidden: a key revoked (or expired, or whose owner's
 * limits changed) at another process, or straight in the database, is still accepted here for
 * at most `ttlMs` after the start of its last successful check — refreshing moves that check
 * forward, never the bound (a check that fails leaves the entry to expire; one that refuses
 * the key removes it). A revocation or rotation through THIS process clears the cache at once
 * (`clear()`), and a check in flight across the clear is not remembered after it.
 *
 * - **Only successes are kept**: an unknown or wrong key is checked every time (a malformed
 *   one, which `parse` refuses, never reaches the store), so a flood of made-up keys can
 *   neither fill the cache nor push a real key out of it.
 * - **Bounded** at `maxEntries` (the oldest entry leaves first).
 * - **Concurrent misses of one key share one check** (kit's SingleFlight).
 * - **The plaintext key is never kept**: an entry holds the key's public prefix and sha256 —
 *   what the key table itself stores, which authenticates nobody — and that is what a refresh
 *   re-checks.
 * - A TTL of 0 turns the cache off: every call asks the store.
 *
 * @example
 * const keys = new VerifiedKeyCache(
 *   { parse: (key) => scheme.parse(key), verify: (presented) => table.authenticatePresented(db, presented, now()) },
 *   { clock, ttlMs: 5_000, maxEntries: 10_000 },
 * );
 * const stop = keys.startRefreshing();
 * await keys.get("mtk_…"); // the store once, then from memory (re-checked in the background)
 * keys.clear(); // a key was revoked through this process
 */
import type { PresentedApiKey } from "./api-key.ts";
import type { Clock } from "./clock.ts";
import { MinHeap } from "./min-heap.ts";
import { type RandomSource, systemRandom } from "./random.ts";
import { SingleFlight } from "./single-flight.ts";

/** Keys re-checked by one background call to the store at most, unless told otherwise. */
export const DEFAULT_KEY_REFRESH_BATCH = 500;
/** By default refresh points fall between half the TTL and three quarters of it. */
export const DEFAULT_KEY_REFRESH_JITTER = 0.5;

/** The key table, as the cache needs it: parse a key (no I/O), check parsed keys (one call for many). */
export interface VerifiedKeySource<T> {
  /** The key's prefix and sha256, or undefined when it cannot be a key (never asked of the store). */
  parse(key: string): PresentedApiKey | undefined;
  /** One answer per parsed key, in order: what it stands for, or undefined (unknown, wrong, expired, revoked). */
  verify(presented: readonly PresentedApiKey[]): Promise<(T | undefined)[]>;
}

export interface VerifiedKeyCacheOptions {
  readonly clock: Clock;
  /** How long a verified key is trusted without asking the store: the revocation bound. 0: no cache. */
  readonly ttlMs: number;
  /** Keys remembered at once. */
  readonly maxEntries: number;
  /** Entries older than this (of keys used within the TTL) are re-checked by `refreshDue`; default ttlMs / 2. */
  readonly refreshAfterMs?: number;
  /** Keys per background `verify` call at most; default DEFAULT_KEY_REFRESH_BATCH. */
  readonly refreshBatch?: number;
  /**
   * Fraction (0..1) of the time between `refreshAfterMs` and the TTL over which entries'
   * refresh points are spread at random; default DEFAULT_KEY_REFRESH_JITTER, 0 re-checks every
   * entry exactly `refreshAfterMs` after its check.
   */
  readonly refreshJitter?: number;
  /** Draws the refresh points; default Math.random. */
  readonly random?: RandomSource;
}

interface Entry<T> {
  readonly presented: PresentedApiKey;
  readonly value: T;
  /** Monotonic instant the check this entry came from started: trusted until checkedAtMs + ttl. */
  readonly checkedAtMs: number;
  /** Monotonic instant from which a background re-check is due (checkedAtMs + refreshAfterMs + jitter). */
  readonly refreshAtMs: number;
  /** The last call that used it (its miss included). */
  lastUsedMs: number;
}

function intAtLeast(name: string, value: number, min: number): void {
  if (!(Number.isSafeInteger(value) && value >= min))
    throw new RangeError(`${name} must be an integer ≥ ${min}, got ${value}`);
}

export class VerifiedKeyCache<T> {
  readonly #source: VerifiedKeySource<T>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #refreshAfterMs: number;
  readonly #refreshBatch: number;
  /** refreshJitter × (ttlMs − refreshAfterMs): the width of the window refresh points are drawn in. */
  readonly #refreshSpreadMs: number;
  readonly #random: RandomSource;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry<T>>();
  /**
   * Entries by the time `refreshDue` must look at them next (their refresh point), so a tick
   * reads what is due, not the whole map (100,000 keys: ~2.5 ms a scan, 8 scans a second). An
   * item whose entry was since replaced or removed is dropped when it comes out.
   */
  readonly #due = new MinHeap<Entry<T>>();
  /** startRefreshing's period; an entry not due yet when looked at (idle, or its check failed) is looked at again after it. */
  readonly #tickMs: number;
  readonly #checks: SingleFlight<T | undefined>;
  /** Bumped by clear(): a check that started before a clear must not refill the cache after it. */
  #generation = 0;

  constructor(source: VerifiedKeySource<T>, options: VerifiedKeyCacheOptions) {
    intAtLeast("ttlMs", options.ttlMs, 0);
    intAtLeast("maxEntries", options.maxEntries, 1);
    const refreshAfterMs = options.refreshAfterMs ?? Math.floor(options.ttlMs / 2);
    intAtLeast("refreshAfterMs", refreshAfterMs, 0);
    if (refreshAfterMs > options.ttlMs)
      throw new RangeError(`refreshAfterMs must be in 0..ttlMs, got ${refreshAfterMs}`);
    const refreshBatch = options.refreshBatch ?? DEFAULT_KEY_REFRESH_BATCH;
    intAtLeast("refreshBatch", refreshBatch, 1);
    const jitter = options.refreshJitter ?? DEFAULT_KEY_REFRESH_JITTER;
    if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`refreshJitter must be in 0..1, got ${jitter}`);
    this.#source = source;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#refreshAfterMs = refreshAfterMs;
    this.#refreshBatch = refreshBatch;
    this.#refreshSpreadMs = jitter * (options.ttlMs - refreshAfterMs);
    this.#random = options.random ?? systemRandom;
    this.#tickMs = Math.max(1, Math.floor(refreshAfterMs / 20));
    this.#maxEntries = options.maxEntries;
    this.#checks = new SingleFlight({ maxInFlightKeys: options.maxEntries });
  }

  /** Keys remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /** What the key stands for: from memory while its entry is fresh, else from the store (and remembered). */
  async get(key: string): Promise<T | undefined> {
    return this.read(key);
  }

  /**
   * `get` without a promise when none is needed: a fresh entry's value (or undefined for a
   * key that cannot parse) as is, in the same turn; a promise only when the store is asked.
   * For a hook on every request, where the hit is the common case.
   */
  read(key: string): T | undefined | Promise<T | undefined> {
    const presented = this.#source.parse(key);
    if (presented === undefined) return undefined;
    if (this.#ttlMs === 0) return this.#source.verify([presented]).then(([value]) => value);
    const nowMs = this.#clock.monotonicMs();
    const entry = this.#entries.get(presented.hash);
    if (entry !== undefined && nowMs - entry.checkedAtMs < this.#ttlMs) {
      entry.lastUsedMs = nowMs;
      return entry.value;
    }
    const generation = this.#generation;
    return this.#checks.do(presented.hash, async () => {
      const startedAtMs = this.#clock.monotonicMs();
      const [value] = await this.#source.verify([presented]);
      if (value === undefined) this.#entries.delete(presented.hash);
      else if (generation === this.#generation)
        this.#remember(this.#entry(presented, value, startedAtMs, startedAtMs));
      return value;
    });
  }

  /**
   * Re-checks, in batches, every entry past its refresh point whose key was used within
   * the last TTL (one re-check per key at a time): renewed when the key still holds, removed
   * when it does not, left to expire when the check fails (and tried again while it lives).
   * Expired entries are dropped. Resolves with the keys re-checked.
   */
  async refreshDue(): Promise<number> {
    if (this.#ttlMs === 0) return 0;
    const nowMs = this.#clock.monotonicMs();
    const due: Entry<T>[] = [];
    while ((this.#due.peekKey() ?? Number.POSITIVE_INFINITY) <= nowMs) {
      const entry = this.#due.pop()!.value;
      const hash = entry.presented.hash;
      if (this.#entries.get(hash) !== entry) continue; // replaced, evicted or refused since
      if (nowMs - entry.checkedAtMs >= this.#ttlMs) {
        this.#entries.delete(hash); // expired: the next call checks it on its own
        continue;
      }
      // Not used lately: looked at again next tick — re-checked if used by then, dropped once expired.
      if (nowMs - entry.lastUsedMs >= this.#ttlMs) this.#due.push(nowMs + this.#tickMs, entry);
      else due.push(entry); // out of the heap while its re-check is in flight: one at a time
    }
    for (let i = 0; i < due.length; i += this.#refreshBatch)
      await this.#recheck(due.slice(i, i + this.#refreshBatch));
    return due.length;
  }

  /**
   * Calls `refreshDue` every `refreshAfterMs / 20` (an unref'd timer: it never holds the
   * process open), fine enough for the spread refresh points to be re-checked apart; returns
   * the function that stops it.
   */
  startRefreshing(): () => void {
    if (this.#ttlMs === 0) return () => {};
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.refreshDue()
        .catch(() => undefined)
        .finally(() => {
          running = false;
        });
    }, this.#tickMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Forgets every key: one was revoked or rotated through this process and must stop working now. */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#due.clear();
  }

  async #recheck(batch: readonly Entry<T>[]): Promise<void> {
    const generation = this.#generation;
    const startedAtMs = this.#clock.monotonicMs();
    let values: (T | undefined)[];
    try {
      values = await this.#source.verify(batch.map((entry) => entry.presented));
    } catch {
      // Each entry expires at its TTL unless a later tick's re-check succeeds first.
      if (generation === this.#generation)
        for (const entry of batch) this.#due.push(startedAtMs + this.#tickMs, entry);
      return;
    }
    if (generation !== this.#generation) return;
    batch.forEach((entry, i) => {
      const hash = entry.presented.hash;
      const current = this.#entries.get(hash);
      // Evicted meanwhile (stays out), or replaced by a check that started after this one (newer).
      if (current === undefined || current.checkedAtMs > startedAtMs) return;
      const value = values[i];
      if (value === undefined) {
        this.#entries.delete(hash);
        return;
      }
      // Set on an existing key keeps its place in the eviction order.
      const renewed = this.#entry(entry.presented, value, startedAtMs, current.lastUsedMs);
      this.#entries.set(hash, renewed);
      this.#due.push(renewed.refreshAtMs, renewed);
    });
  }

  /** An entry from a check that started at `checkedAtMs`, its refresh point drawn. */
  #entry(presented: PresentedApiKey, value: T, checkedAtMs: number, lastUsedMs: number): Entry<T> {
    const refreshAtMs = checkedAtMs + this.#refreshAfterMs + this.#random.next() * this.#refreshSpreadMs;
    return { presented, value, checkedAtMs, refreshAtMs, lastUsedMs };
  }

  #remember(entry: Entry<T>): void {
    const hash = entry.presented.hash;
    this.#entries.delete(hash); // re-inserted last: the Map's order is the eviction order
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(hash, entry);
    this.#due.push(entry.refreshAtMs, entry);
  }
}
