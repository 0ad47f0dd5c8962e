/**
 * The distributed lease of the text's stampede loop (CA-20, CA-21): the first process to
 * miss takes `SET lock:<key> <random token> NX PX <leaseMs>` and reloads; the others poll
 * the key up to `pollCount` × `pollMs` (the text's 20 × 25 ms) and take the value when it
 * appears. Facebook's memcache leases do the same job; across N processes one load
 * reaches the database instead of N. The PX makes a crashed holder harmless: its lease
 * simply expires.
 *
 * Release must delete only our own lease. Redis does that atomically with a Lua
 * compare-and-delete; our node has no EVAL, so release is GET, compare, DEL, and between
 * the GET and the DEL the lease can expire and a successor take it; our DEL would then
 * remove the successor's lease. Two things bound that race: the DEL is skipped once the
 * lease has been held for more than `leaseMs − releaseMarginMs` (it is about to expire on
 * its own: let it), so the race needs a GET→DEL round trip longer than the margin
 * (a second, against sub-millisecond round trips); and its worst outcome is one extra
 * load from the database by a third process, never a wrong value, because the database
 * stays the truth and the cache only ever holds what a loader read from it.
 *
 * @example
 * const lease = new StampedeLease(client, { leaseMs: 5_000, pollCount: 20, pollMs: 25, releaseMarginMs: 1_000, lockPrefix: "lock:" });
 * const held = await lease.tryAcquire("event:42");
 * if (held) try { await reload(); } finally { await lease.release(held); }
 * else await lease.poll(() => client.get("event:42"));
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { CacheClient } from "./cache-client.ts";
import { requireClientInteger } from "./client-errors.ts";

export interface LeaseOptions {
  /** Lease lifetime (`PX`): longer than a load takes, short enough that a crashed holder does not stall readers long. */
  readonly leaseMs: number;
  /** Times a process that lost the race re-reads the key (the text's 20). */
  readonly pollCount: number;
  /** Wait before each re-read (the text's 25 ms). */
  readonly pollMs: number;
  /** Release is skipped once the lease has this little life left (see the race above). */
  readonly releaseMarginMs: number;
  /** Lease key = prefix + cache key (the text's `lock:key`). */
  readonly lockPrefix: string;
}

export const leaseDefaults: Readonly<LeaseOptions> = Object.freeze({
  leaseMs: 5_000,
  pollCount: 20,
  pollMs: 25,
  releaseMarginMs: 1_000,
  lockPrefix: "lock:",
});

export interface LeaseDeps {
  /** A fresh unguessable token per lease (128 random bits by default). */
  readonly token?: () => string;
  /** Waits between polls (a timer by default). */
  readonly delay?: (ms: number) => Promise<void>;
  /** Monotonic ms, to know how long a lease has been held. */
  readonly monotonicMs?: () => number;
}

export interface HeldLease {
  readonly lockKey: string;
  readonly token: string;
  readonly acquiredAtMs: number;
}

export type ReleaseOutcome = "released" | "left-to-expire" | "not-ours";

export class StampedeLease {
  readonly #client: CacheClient;
  readonly #options: LeaseOptions;
  readonly #token: () => string;
  readonly #delay: (ms: number) => Promise<void>;
  readonly #monotonicMs: () => number;

  constructor(client: CacheClient, options: Partial<LeaseOptions> = {}, deps: LeaseDeps = {}) {
    this.#client = client;
    this.#options = { ...leaseDefaults, ...options };
    const o = this.#options;
    requireClientInteger("lease.leaseMs", o.leaseMs, 1, 3_600_000);
    requireClientInteger("lease.pollCount", o.pollCount, 0, 10_000);
    requireClientInteger("lease.pollMs", o.pollMs, 1, 60_000);
    requireClientInteger("lease.releaseMarginMs", o.releaseMarginMs, 0, o.leaseMs);
    this.#token = deps.token ?? (() => randomBytes(16).toString("hex"));
    this.#delay = deps.delay ?? ((ms) => sleep(ms));
    this.#monotonicMs = deps.monotonicMs ?? (() => performance.now());
  }

  get options(): LeaseOptions {
    return this.#options;
  }

  /** The lease when this process won it, undefined when another holds it. */
  async tryAcquire(key: string): Promise<HeldLease | undefined> {
    const lockKey = this.#options.lockPrefix + key;
    const token = this.#token();
    const acquiredAtMs = this.#monotonicMs();
    const won = await this.#client.set(lockKey, token, { nx: true, pxMs: this.#options.leaseMs });
    return won ? { lockKey, token, acquiredAtMs } : undefined;
  }

  /** Deletes the lease if it is still ours and not about to expire (GET, compare, DEL: see the race above). */
  async release(lease: HeldLease): Promise<ReleaseOutcome> {
    const heldMs = this.#monotonicMs() - lease.acquiredAtMs;
    if (heldMs > this.#options.leaseMs - this.#options.releaseMarginMs) return "left-to-expire";
    const current = await this.#client.get(lease.lockKey);
    if (current !== lease.token) return "not-ours";
    await this.#client.del(lease.lockKey);
    return "released";
  }

  /**
   * Re-reads up to pollCount times, pollMs apart; the first value seen, or undefined when
   * the holder did not fill the key in time (the caller then loads it itself).
   */
  async poll<T>(read: () => Promise<T | undefined>): Promise<T | undefined> {
    for (let attempt = 0; attempt < this.#options.pollCount; attempt++) {
      await this.#delay(this.#options.pollMs);
      const value = await read();
      if (value !== undefined) return value;
    }
    return undefined;
  }
}
