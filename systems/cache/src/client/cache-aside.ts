/**
 * Cache-aside with the text's defences against its failure modes (004 §6.2, §6.4):
 *
 * - a TTL on every write, jittered (300 s ± 10%) so bulk-written keys do not expire in
 *   the same second (CA-12);
 * - stampede protection (CA-20, CA-21): one in-flight load per key per process (request
 *   coalescing) and one per key across processes (the lease: `SET lock:key token NX PX`,
 *   re-read after winning, release only our own token, losers poll 20 × 25 ms);
 * - XFetch early refresh: a reader may refresh a still-fresh value with probability
 *   exp(−gap / (δ·β)) (δ stored beside the value), so one reader refreshes shortly before
 *   expiry instead of all readers at it (CA-20);
 * - stale-while-revalidate: past freshness but inside `staleWhileRevalidateS`, readers
 *   get the stale value at once while ONE refresh runs in the background (CA-20);
 * - hot keys (CA-18): an in-process L1 with a TTL of seconds, and N copies (`key#1..#N`)
 *   written together and read one at random;
 * - big keys (CA-19): values over a threshold are reported with their size and rate.
 *
 * The cache is an optimisation, never the truth: if a cache read or the lease fails,
 * the value comes from the loader anyway (counted as `cacheErrors`); if a cache write
 * fails, the loaded value is still returned.
 *
 * @example
 * const pages = new CacheAside<EventPage>({ client, ttlS: 300, jitter: 0.1, staleWhileRevalidateS: 30 });
 * const page = await pages.getOrLoad("event:42", () => db.eventPage(42));
 */

import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { MAX_IN_FLIGHT_KEYS, SingleFlight } from "@casebook/kit/single-flight";
import { BigKeyDetector, type BigKeyReport } from "../domain/big-key-detector.ts";
import { decodeEnvelope, encodeEnvelope } from "../domain/cache-envelope.ts";
import { HotKeyDetector } from "../domain/hot-key-detector.ts";
import { HotKeyL1 } from "../domain/hot-key-l1.ts";
import { MAX_HOT_KEY_REPLICAS, pickReplicaKey, replicaKeys } from "../domain/hot-key-replicas.ts";
import { jitteredTtlS, ttlRangeS } from "../domain/ttl-jitter.ts";
import { MAX_XFETCH_BETA, shouldRefreshEarly } from "../domain/xfetch.ts";
import { requireInteger } from "../errors.ts";
import type { CacheClient } from "./cache-client.ts";
import { requireClientInteger, requireClientNumber } from "./client-errors.ts";
import { type LeaseDeps, type LeaseOptions, StampedeLease } from "./stampede-lease.ts";

export interface Codec<T> {
  encode(value: T): string;
  decode(text: string): T;
}

export const jsonCodec: Codec<unknown> = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => JSON.parse(text),
};

export interface HotKeyOptions {
  /** Which keys are hot; without it (and without `detect`) no key is. */
  readonly isHot?: (key: string) => boolean;
  /** Detect hot keys from this process's reads (a count-min sketch). */
  readonly detect?: { readonly capacity: number; readonly threshold: number };
  /** In-process L1 for hot keys: a TTL of seconds, bounded entries. */
  readonly l1?: { readonly maxEntries: number; readonly ttlMs: number };
  /** Copies written per hot key (`key#1..#N`), one read at random. 1 = no replication. */
  readonly replicas?: number;
}

export interface BigKeyOptions {
  readonly thresholdBytes: number;
  readonly onBigKey: (report: BigKeyReport) => void;
  readonly reportIntervalMs?: number;
  readonly maxTrackedKeys?: number;
}

export type CacheAsideEventType =
  | "hit"
  | "l1-hit"
  | "miss"
  | "load"
  | "stale"
  | "early-refresh"
  | "hit-after-lock"
  | "lease-wait-hit"
  | "lease-timeout"
  | "cache-error"
  | "refresh-failed";

export interface CacheAsideOptions<T> {
  readonly client: CacheClient;
  /** Base TTL in seconds (the text's 300). */
  readonly ttlS?: number;
  /** Fraction of the TTL to jitter by, each way (the text's 0.1). */
  readonly jitter?: number;
  readonly codec?: Codec<T>;
  /** One in-flight load per key in this process. Default true. */
  readonly coalesce?: boolean;
  readonly maxInFlightKeys?: number;
  /** The distributed lease; `false` turns it off. Defaults are the text's (PX 5 s, 20 × 25 ms). */
  readonly lease?: false | Partial<LeaseOptions>;
  /** XFetch β; 0 turns early refresh off. Default 1. */
  readonly earlyRefreshBeta?: number;
  /** How long past freshness a value is still served while one refresh runs. Default 0 (off). */
  readonly staleWhileRevalidateS?: number;
  readonly hotKeys?: HotKeyOptions;
  readonly bigKeys?: BigKeyOptions;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  readonly leaseDeps?: LeaseDeps;
  readonly onEvent?: (type: CacheAsideEventType, key: string) => void;
}

export interface CallOptions {
  readonly ttlS?: number;
  readonly jitter?: number;
}

export type CacheAsideStats = Record<CacheAsideEventType, number>;

/** Bound on a stale window: a day. */
const MAX_STALE_S = 86_400;

export class CacheAside<T> {
  readonly #client: CacheClient;
  readonly #codec: Codec<T>;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #ttlS: number;
  readonly #jitter: number;
  readonly #beta: number;
  readonly #staleS: number;
  readonly #lease: StampedeLease | undefined;
  readonly #loads: SingleFlight<T> | undefined;
  readonly #refreshes: SingleFlight<void>;
  readonly #hot: HotKeyOptions | undefined;
  readonly #detector: HotKeyDetector | undefined;
  readonly #l1: HotKeyL1<T> | undefined;
  readonly #bigKeys: BigKeyDetector | undefined;
  readonly #onEvent: CacheAsideOptions<T>["onEvent"];
  readonly #background = new Set<Promise<void>>();
  readonly #stats: CacheAsideStats = {
    hit: 0,
    "l1-hit": 0,
    miss: 0,
    load: 0,
    stale: 0,
    "early-refresh": 0,
    "hit-after-lock": 0,
    "lease-wait-hit": 0,
    "lease-timeout": 0,
    "cache-error": 0,
    "refresh-failed": 0,
  };

  constructor(options: CacheAsideOptions<T>) {
    this.#client = options.client;
    this.#codec = options.codec ?? (jsonCodec as Codec<T>);
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#ttlS = options.ttlS ?? 300;
    this.#jitter = options.jitter ?? 0.1;
    ttlRangeS(this.#ttlS, this.#jitter);
    this.#beta = options.earlyRefreshBeta ?? 1;
    requireClientNumber("earlyRefreshBeta", this.#beta, 0, MAX_XFETCH_BETA);
    this.#staleS = options.staleWhileRevalidateS ?? 0;
    requireClientInteger("staleWhileRevalidateS", this.#staleS, 0, MAX_STALE_S);
    const maxInFlightKeys = options.maxInFlightKeys ?? 10_000;
    requireInteger("maxInFlightKeys", maxInFlightKeys, 1, MAX_IN_FLIGHT_KEYS);
    this.#loads = options.coalesce === false ? undefined : new SingleFlight<T>({ maxInFlightKeys });
    this.#refreshes = new SingleFlight<void>({ maxInFlightKeys });
    const leaseDeps = { monotonicMs: () => this.#clock.monotonicMs(), ...options.leaseDeps };
    this.#lease =
      options.lease === false ? undefined : new StampedeLease(this.#client, options.lease, leaseDeps);
    this.#hot = options.hotKeys;
    this.#detector = this.#hot?.detect ? new HotKeyDetector(this.#hot.detect) : undefined;
    this.#l1 = this.#hot?.l1 ? new HotKeyL1<T>({ ...this.#hot.l1, clock: this.#clock }) : undefined;
    requireClientInteger("hotKeys.replicas", this.#hot?.replicas ?? 1, 1, MAX_HOT_KEY_REPLICAS);
    this.#bigKeys = options.bigKeys ? this.#bigKeyDetector(options.bigKeys) : undefined;
    this.#onEvent = options.onEvent;
  }

  #bigKeyDetector(options: BigKeyOptions): BigKeyDetector {
    return new BigKeyDetector({
      thresholdBytes: options.thresholdBytes,
      reportIntervalMs: options.reportIntervalMs ?? 60_000,
      maxTrackedKeys: options.maxTrackedKeys ?? 1_000,
      clock: this.#clock,
      onBigKey: options.onBigKey,
    });
  }

  /** Counts of each outcome since this helper was created. */
  get stats(): Readonly<CacheAsideStats> {
    return { ...this.#stats };
  }

  /** Resolves once every background refresh started so far has finished. */
  async whenIdle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  /**
   * The cached value of `key`, or `loader()`'s result written to the cache with a
   * jittered TTL; concurrent misses share one load (see the class comment).
   */
  async getOrLoad(key: string, loader: () => Promise<T>, call: CallOptions = {}): Promise<T> {
    const hot = this.#isHot(key);
    if (hot && this.#l1) {
      const local = this.#l1.get(key);
      if (local !== undefined) return this.#count("l1-hit", key, local);
    }
    const stored = await this.#read(key, hot);
    if (stored === undefined) {
      this.#count("miss", key, undefined);
      const load = () => this.#loadThroughLease(key, loader, call, hot);
      return this.#loads ? this.#loads.do(key, load) : load();
    }
    const envelope = decodeEnvelope(stored);
    const value = this.#codec.decode(envelope.payload);
    const nowMs = this.#clock.nowMs();
    if (envelope.freshUntilMs !== undefined && nowMs >= envelope.freshUntilMs) {
      this.#refreshInBackground(key, loader, call, hot);
      return this.#count("stale", key, value);
    }
    if (this.#wantsEarlyRefresh(nowMs, envelope.freshUntilMs, envelope.deltaMs)) {
      this.#count("early-refresh", key, undefined);
      this.#refreshInBackground(key, loader, call, hot);
    }
    if (hot) this.#l1?.set(key, value);
    return this.#count("hit", key, value);
  }

  /** Deletes `key` (every copy of a hot key) from the cache and this process's L1: the write path's invalidation. */
  async invalidate(key: string): Promise<void> {
    this.#l1?.delete(key);
    const replicas = this.#hot?.replicas ?? 1;
    const names = replicas > 1 && this.#isHot(key, false) ? [key, ...replicaKeys(key, replicas)] : [key];
    await this.#client.del(...names);
  }

  #wantsEarlyRefresh(nowMs: number, freshUntilMs: number | undefined, deltaMs: number | undefined): boolean {
    if (this.#beta === 0 || freshUntilMs === undefined || deltaMs === undefined) return false;
    return shouldRefreshEarly({
      nowMs,
      expiresAtMs: freshUntilMs,
      deltaMs,
      beta: this.#beta,
      random: this.#random,
    });
  }

  #isHot(key: string, record = true): boolean {
    if (this.#hot === undefined) return false;
    if (this.#hot.isHot?.(key)) return true;
    if (this.#detector === undefined) return false;
    return record ? this.#detector.record(key) : this.#detector.isHot(key);
  }

  /** The stored text of `key` (a random copy when hot and replicated); undefined on a miss or a cache error. */
  async #read(key: string, hot: boolean): Promise<string | undefined> {
    const replicas = this.#hot?.replicas ?? 1;
    const name = hot && replicas > 1 ? pickReplicaKey(key, replicas, this.#random) : key;
    let stored: string | null;
    try {
      stored = await this.#client.get(name);
    } catch {
      this.#count("cache-error", key, undefined);
      return undefined;
    }
    if (stored === null) return undefined;
    this.#bigKeys?.observe(key, Buffer.byteLength(stored), "read");
    return stored;
  }

  /** The miss path: the lease winner re-reads then loads; the others poll, then load if nothing came. */
  async #loadThroughLease(
    key: string,
    loader: () => Promise<T>,
    call: CallOptions,
    hot: boolean,
  ): Promise<T> {
    const lease = this.#lease;
    if (lease === undefined) return this.#loadAndWrite(key, loader, call, hot);
    let held: Awaited<ReturnType<StampedeLease["tryAcquire"]>>;
    try {
      held = await lease.tryAcquire(key);
    } catch {
      this.#count("cache-error", key, undefined);
      return this.#loadAndWrite(key, loader, call, hot);
    }
    if (held !== undefined) {
      try {
        // Someone may have filled it between our miss and our lease (the text's re-read).
        const filled = await this.#read(key, hot);
        if (filled !== undefined) return this.#count("hit-after-lock", key, this.#decode(filled));
        return await this.#loadAndWrite(key, loader, call, hot);
      } finally {
        await lease.release(held).catch(() => this.#count("cache-error", key, undefined));
      }
    }
    const polled = await lease.poll(() => this.#read(key, hot));
    if (polled !== undefined) return this.#count("lease-wait-hit", key, this.#decode(polled));
    this.#count("lease-timeout", key, undefined);
    return this.#loadAndWrite(key, loader, call, hot);
  }

  async #loadAndWrite(key: string, loader: () => Promise<T>, call: CallOptions, hot: boolean): Promise<T> {
    const startedMs = this.#clock.monotonicMs();
    const value = await loader();
    const deltaMs = this.#clock.monotonicMs() - startedMs;
    this.#count("load", key, undefined);
    await this.#write(key, value, deltaMs, call, hot);
    return value;
  }

  /** Writes the value (every copy of a hot key), each with its own jittered TTL plus the stale window. */
  async #write(key: string, value: T, deltaMs: number, call: CallOptions, hot: boolean): Promise<void> {
    const payload = this.#codec.encode(value);
    const replicas = this.#hot?.replicas ?? 1;
    const names = hot && replicas > 1 ? replicaKeys(key, replicas) : [key];
    const envelope = this.#beta > 0 || this.#staleS > 0;
    const writes = names.map((name) => {
      const ttlS = jitteredTtlS(call.ttlS ?? this.#ttlS, call.jitter ?? this.#jitter, this.#random);
      const freshUntilMs = this.#clock.nowMs() + ttlS * 1_000;
      const stored = envelope ? encodeEnvelope({ payload, deltaMs, freshUntilMs }) : payload;
      this.#bigKeys?.observe(key, Buffer.byteLength(stored), "write");
      return this.#client.set(name, stored, { exS: ttlS + this.#staleS });
    });
    if (hot) this.#l1?.set(key, value);
    const results = await Promise.allSettled(writes);
    if (results.some((result) => result.status === "rejected")) this.#count("cache-error", key, undefined);
  }

  /** One refresh per key at a time in this process, and across processes only the lease winner's. */
  #refreshInBackground(key: string, loader: () => Promise<T>, call: CallOptions, hot: boolean): void {
    const refresh = this.#refreshes.do(key, async () => {
      const held = this.#lease ? await this.#lease.tryAcquire(key) : undefined;
      if (this.#lease && held === undefined) return;
      try {
        await this.#loadAndWrite(key, loader, call, hot);
      } finally {
        if (held) await this.#lease?.release(held);
      }
    });
    const tracked = refresh.catch(() => {
      this.#count("refresh-failed", key, undefined);
    });
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }

  #decode(stored: string): T {
    return this.#codec.decode(decodeEnvelope(stored).payload);
  }

  #count<V>(type: CacheAsideEventType, key: string, value: V): V {
    this.#stats[type] += 1;
    this.#onEvent?.(type, key);
    return value;
  }
}
