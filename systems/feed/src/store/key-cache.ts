/**
 * A bounded in-process cache of verified API keys → their user: the home feed's first
 * PostgreSQL round trip (the key's row, infra's ApiKeyTable) is paid once per key per TTL
 * instead of on every read.
 *
 * What it costs, stated: a key revoked (or expired) elsewhere keeps working in this process for
 * up to `ttlMs`; a revocation through this process's admin API clears the cache at once
 * (`clear`). Only keys that verified are kept — an unknown key is asked every time, so a
 * stranger cannot fill the cache — and they are kept by sha256, never as usable secrets.
 * At `maxKeys` the oldest entry goes. A TTL of 0 turns the cache off.
 *
 * With `refreshAfterMs` (below the TTL), a key served from an entry older than that is checked
 * again in the background (one check per key at a time): a reader who keeps reading never waits
 * for the database, and the revocation bound stays the TTL — an entry is never served older.
 *
 * @example
 * const keys = new VerifiedKeyCache({ verify: (k) => userOfKey(db, k, clock.nowMs()), clock, ttlMs: 5_000, maxKeys: 100_000 });
 * await keys.userOf("fdk_…"); // 42n (asked once), then from memory for 5 s
 */
import { createHash } from "node:crypto";
import type { Clock } from "@casebook/kit/clock";

/** Keys one process remembers at most (~150 B each). */
export const MAX_CACHED_KEYS = 100_000;

export interface VerifiedKeyCacheOptions {
  /** The store's answer: the key's user, or undefined (malformed, unknown, wrong, expired, revoked). */
  readonly verify: (key: string) => Promise<bigint | undefined>;
  readonly clock: Clock;
  readonly ttlMs: number;
  readonly maxKeys: number;
  /** Entries older than this are checked again in the background when served; none: never. */
  readonly refreshAfterMs?: number;
}

export class VerifiedKeyCache {
  readonly #o: VerifiedKeyCacheOptions;
  readonly #entries = new Map<string, { readonly atMs: number; readonly userId: bigint }>();
  /** Bumped by `clear`: a verification that began before a revocation is not cached after it. */
  #generation = 0;
  /** Digests whose background check is in flight. */
  readonly #refreshing = new Set<string>();
  hits = 0;
  misses = 0;

  constructor(options: VerifiedKeyCacheOptions) {
    this.#o = options;
  }

  async userOf(key: string): Promise<bigint | undefined> {
    if (this.#o.ttlMs <= 0) return this.#o.verify(key);
    const digest = createHash("sha256").update(key).digest("base64url");
    const cached = this.#entries.get(digest);
    const nowMs = this.#o.clock.nowMs();
    if (cached !== undefined && nowMs - cached.atMs < this.#o.ttlMs) {
      this.hits++;
      const refreshAfterMs = this.#o.refreshAfterMs;
      if (refreshAfterMs !== undefined && nowMs - cached.atMs >= refreshAfterMs) this.#refresh(key, digest);
      return cached.userId;
    }
    this.misses++;
    const generation = this.#generation;
    const userId = await this.#o.verify(key);
    this.#entries.delete(digest);
    if (userId === undefined || generation !== this.#generation) return userId;
    if (this.#entries.size >= this.#o.maxKeys) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(digest, { atMs: nowMs, userId });
    return userId;
  }

  /** The background check of a served entry: renewed when the key still verifies, dropped when not. */
  #refresh(key: string, digest: string): void {
    if (this.#refreshing.has(digest)) return;
    this.#refreshing.add(digest);
    const generation = this.#generation;
    const startedAtMs = this.#o.clock.nowMs();
    this.#o
      .verify(key)
      .then((userId) => {
        if (generation !== this.#generation) return;
        this.#entries.delete(digest);
        if (userId !== undefined) this.#entries.set(digest, { atMs: startedAtMs, userId });
      })
      // A failed check leaves the entry to expire at its TTL; the next read past it asks again.
      .catch(() => undefined)
      .finally(() => this.#refreshing.delete(digest));
  }

  /** Forgets every key: a key was revoked or rotated here, and must stop working now. */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}
