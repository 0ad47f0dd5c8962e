/**
 * CA-24's study: the same trace replayed through each eviction policy at the same
 * capacity, as a cache-aside client would drive it (get; on a miss, set), counting hits.
 * Every policy sees the same requests in the same order; the Redis models read a manual
 * clock that advances `requestIntervalMs` per request, and every random choice comes from
 * a generator seeded per run, so a table is reproducible to the last digit.
 *
 * The hit ratio counts the whole trace, cold start included (a cache of 10,000 entries
 * misses at most 10,000 times more than a warm one: 1% of a 1M trace). Bélády runs
 * offline on the same trace and bounds every other column from above.
 *
 * @example
 * const trace = zipfTrace({ keys: 10_000, requests: 100_000, random: seededRandom(1) });
 * hitRatio("w-tiny-lfu", trace, 500); // ~0.65
 * hitRatio("belady", trace, 500);     // higher: the ceiling
 */
import { ManualClock } from "@casebook/kit/clock";
import { type RandomSource, seededRandom } from "@casebook/kit/random";
import { requireInteger, requireNumber } from "../errors.ts";
import { beladyHits, nextUseIndex } from "./belady.ts";
import { LfuCache } from "./lfu-cache.ts";
import { LruCache } from "./lru-cache.ts";
import { RedisSampledCache } from "./redis-sampled-cache.ts";
import { WTinyLfu } from "./w-tiny-lfu.ts";

export const policyNames = [
  "lru",
  "sampled-lru",
  "lfu",
  "sampled-lfu",
  "sampled-ttl",
  "w-tiny-lfu",
  "belady",
] as const;
export type PolicyName = (typeof policyNames)[number];

/** How each policy is named in tables. */
export const policyLabels: Readonly<Record<PolicyName, string>> = {
  lru: "LRU",
  "sampled-lru": "sampled LRU (Redis)",
  lfu: "LFU-DA",
  "sampled-lfu": "sampled LFU (Redis)",
  "sampled-ttl": "TTL (Redis volatile-ttl)",
  "w-tiny-lfu": "W-TinyLFU",
  belady: "Bélády (optimal)",
};

/**
 * The text's comfortable rate for one node (80,000 ops/s): sets how much simulated time a
 * trace spans, which only the Redis models' clocks (LRU seconds, LFU decay minutes) see.
 */
export const DEFAULT_REQUEST_INTERVAL_MS = 1_000 / 80_000;

/** The operations the replay drives: a read, and a write after a miss. */
export interface ReplayPolicy {
  get(key: number): boolean;
  set(key: number, weight: number): boolean;
}

export interface SimOptions {
  /** Seeds every random choice of the run (sampling, hash-flood guard, Morris counters). */
  readonly seed?: number | string;
  readonly requestIntervalMs?: number;
  /** Bélády's next-use index of this trace, when built once for several capacities. */
  readonly next?: Int32Array;
}

/**
 * An online policy of `capacity` entries, wired to `clock` and `random`.
 *
 * @example
 * createPolicy("sampled-lfu", 1_000, new ManualClock(), seededRandom(1));
 */
export function createPolicy(
  name: Exclude<PolicyName, "belady">,
  capacity: number,
  clock: ManualClock,
  random: RandomSource,
): ReplayPolicy {
  const bounds = { maxEntries: capacity };
  switch (name) {
    case "lru":
      return new LruCache<number>(bounds);
    case "lfu":
      return new LfuCache<number>(bounds);
    case "w-tiny-lfu":
      return new WTinyLfu<number>({ ...bounds, random });
    case "sampled-lru":
      return new RedisSampledCache<number>({ ...bounds, policy: "lru", clock, random });
    case "sampled-lfu":
      return new RedisSampledCache<number>({ ...bounds, policy: "lfu", clock, random });
    case "sampled-ttl":
      return new RedisSampledCache<number>({ ...bounds, policy: "ttl", clock, random });
  }
}

/**
 * Replays `trace` cache-aside (get; set on a miss) and returns the hits.
 *
 * @example
 * replay(trace, new LruCache<number>({ maxEntries: 100 }), new ManualClock(), 0.0125);
 */
export function replay(
  trace: Int32Array,
  policy: ReplayPolicy,
  clock: ManualClock,
  requestIntervalMs: number,
): number {
  let hits = 0;
  for (let i = 0; i < trace.length; i++) {
    const key = trace[i]!;
    if (policy.get(key)) hits++;
    else policy.set(key, 1);
    clock.advance(requestIntervalMs);
  }
  return hits;
}

/**
 * The hit ratio (0..1) of policy `name` with `capacity` entries on `trace`.
 *
 * @example
 * hitRatio("lru", loopTrace({ length: 100, requests: 1_000 }), 50); // 0: LRU's worst case
 */
export function hitRatio(
  name: PolicyName,
  trace: Int32Array,
  capacity: number,
  options: SimOptions = {},
): number {
  requireInteger("capacity", capacity, 1, 2 ** 24);
  if (trace.length === 0) return 0;
  if (name === "belady") return beladyHits(trace, capacity, options.next) / trace.length;
  const requestIntervalMs = options.requestIntervalMs ?? DEFAULT_REQUEST_INTERVAL_MS;
  requireNumber("requestIntervalMs", requestIntervalMs, 0, 3_600_000);
  const clock = new ManualClock(0);
  const random = seededRandom(`${options.seed ?? "hit-ratio"}:${name}:${capacity}`);
  return replay(trace, createPolicy(name, capacity, clock, random), clock, requestIntervalMs) / trace.length;
}

export interface NamedTrace {
  readonly name: string;
  readonly trace: Int32Array;
  /** The key space that cache sizes are a fraction of. */
  readonly keys: number;
}

export interface HitRatioCell {
  readonly trace: string;
  /** Cache size as a fraction of the key space (0.01 = 1%). */
  readonly sizeFraction: number;
  readonly capacity: number;
  readonly policy: PolicyName;
  readonly hitRatio: number;
}

export interface HitRatioTableOptions extends Omit<SimOptions, "next"> {
  readonly traces: readonly NamedTrace[];
  /** Cache sizes as fractions of each trace's key space (1%, 5%, 10% by default). */
  readonly sizeFractions?: readonly number[];
  readonly policies?: readonly PolicyName[];
  /** Called after each cell, for progress on a long run. */
  readonly onCell?: (cell: HitRatioCell) => void;
}

/**
 * Every trace × size × policy: the study's table, as cells.
 *
 * @example
 * hitRatioTable({ traces: [{ name: "zipf", trace, keys: 10_000 }], sizeFractions: [0.01] });
 */
export function hitRatioTable(options: HitRatioTableOptions): HitRatioCell[] {
  const sizeFractions = options.sizeFractions ?? [0.01, 0.05, 0.1];
  const policies = options.policies ?? policyNames;
  const cells: HitRatioCell[] = [];
  for (const { name: traceName, trace, keys } of options.traces) {
    const next = policies.includes("belady") ? nextUseIndex(trace) : undefined;
    for (const sizeFraction of sizeFractions) {
      requireNumber("sizeFraction", sizeFraction, 1e-9, 1);
      const capacity = Math.max(1, Math.round(keys * sizeFraction));
      for (const policy of policies) {
        const simOptions: SimOptions = { ...options, ...(next ? { next } : {}) };
        const cell = {
          trace: traceName,
          sizeFraction,
          capacity,
          policy,
          hitRatio: hitRatio(policy, trace, capacity, simOptions),
        };
        cells.push(cell);
        options.onCell?.(cell);
      }
    }
  }
  return cells;
}
