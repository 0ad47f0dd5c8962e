/**
 * The API-key check without a database round trip per request: a bounded in-process map
 * from sha256(key) to the tenant and its quota, each entry trusted for a short TTL. The
 * database check (`TenantRepository.authenticate`: lookup by prefix, constant-time hash
 * compare, expiry, revocation, the tenant's quota) runs once per key per TTL per replica;
 * concurrent misses of one key share that one check.
 *
 * The bound this buys is stated, not hidden: a key revoked (or expired, or a tenant whose
 * quota changed) at another replica, or straight in the database, is still accepted here
 * for at most `ttlMs` after it was last checked. A revocation or rotation through THIS
 * replica's admin API clears the map at once (`clear()`). Only successes are kept: an
 * unknown or wrong key is checked every time, so a flood of made-up keys cannot fill the
 * map nor make a real key wait behind them; the map's size is bounded by `maxEntries`
 * (the oldest entry leaves first).
 *
 * The plaintext key is never kept: the map is keyed by its sha256, like the table.
 *
 * @example
 * const keys = new TenantKeyCache((key) => tenants.authenticate(key), { clock, ttlMs: 5_000, maxEntries: 10_000 });
 * await keys.authenticate("llm_…"); // the database once, then from memory for 5 s
 */
import { createHash } from "node:crypto";
import type { Clock } from "@casebook/kit/clock";
import { SingleFlight } from "@casebook/kit/single-flight";
import type { TenantLimits } from "../domain/budget-plan.ts";

/** How long a checked key is trusted without asking the database again: the revocation bound. */
export const DEFAULT_KEY_CACHE_TTL_MS = 5_000;
/** Keys remembered at once per replica (≈ 200 bytes each). */
export const DEFAULT_KEY_CACHE_MAX_ENTRIES = 10_000;

interface Entry {
  readonly tenant: TenantLimits;
  readonly expiresAtMs: number;
}

export class TenantKeyCache {
  readonly #verify: (key: string) => Promise<TenantLimits | undefined>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();
  readonly #checks: SingleFlight<TenantLimits | undefined>;
  /** Bumped by clear(): a check that started before a clear must not refill the map after it. */
  #generation = 0;

  constructor(
    verify: (key: string) => Promise<TenantLimits | undefined>,
    options: { clock: Clock; ttlMs: number; maxEntries: number },
  ) {
    if (!(Number.isSafeInteger(options.ttlMs) && options.ttlMs >= 0))
      throw new RangeError(`ttlMs must be an integer ≥ 0, got ${options.ttlMs}`);
    if (!(Number.isSafeInteger(options.maxEntries) && options.maxEntries >= 1))
      throw new RangeError(`maxEntries must be an integer ≥ 1, got ${options.maxEntries}`);
    this.#verify = verify;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#checks = new SingleFlight({ maxInFlightKeys: options.maxEntries });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The key's tenant: from memory while its entry is fresh, else from the database (and remembered). */
  async authenticate(key: string): Promise<TenantLimits | undefined> {
    if (this.#ttlMs === 0) return this.#verify(key);
    const hash = createHash("sha256").update(key).digest("hex");
    const entry = this.#entries.get(hash);
    if (entry !== undefined && entry.expiresAtMs > this.#clock.monotonicMs()) return entry.tenant;
    const generation = this.#generation;
    return this.#checks.do(hash, async () => {
      const tenant = await this.#verify(key);
      if (tenant !== undefined && generation === this.#generation) this.#remember(hash, tenant);
      return tenant;
    });
  }

  /** Forget every key: this replica's admin API revoked or rotated one. */
  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }

  #remember(hash: string, tenant: TenantLimits): void {
    this.#entries.delete(hash); // re-inserted last: the Map's order is the eviction order
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(hash, { tenant, expiresAtMs: this.#clock.monotonicMs() + this.#ttlMs });
  }
}
