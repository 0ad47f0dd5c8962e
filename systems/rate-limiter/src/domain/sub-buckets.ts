/**
 * RL-09 hot keys: one client's quota split into N sub-buckets (`user:42:0..N−1`), each
 * holding 1/N of the capacity and of the rate, one picked per request, so a single
 * very busy client spreads over N keys (and N shards) instead of saturating one.
 *
 * The error, stated precisely (C = quota, N = sub-buckets, R = requests in a burst
 * with no refill, c_i = sub-bucket i's capacity):
 *
 * - Overshoot: 0. Capacities are split with the remainder spread one by one
 *   (`shareOf`), so Σ c_i = C exactly, and rates r/N sum to r: over any interval t the
 *   split admits at most Σ (c_i + r_i·t) = C + r·t, the unsplit bound. (A naive
 *   ceil(C/N) per sub-bucket would overshoot by N·ceil(C/N) − C, up to N − 1.)
 * - Shortfall: with random picking some sub-buckets run dry while others still hold
 *   tokens, so fewer than min(R, C) are admitted. Exactly, with X_i ~ Bin(R, 1/N):
 *   E[shortfall] = ½·Σ E|X_i − c_i| − ½·|R − C|   (`expectedShortfall`), and by Jensen
 *   E[shortfall] ≤ ½·Σ √(σ² + δ_i²) − ½·|R − C|, σ² = R(1/N)(1 − 1/N), δ_i = R/N − c_i
 *   (`randomShortfallBound`). For R = C with N | C that is ½·√(C(N − 1)): C = 1000,
 *   N = 16 gives ≤ 61 (6.1 %); the exact value is ≈ 49.
 * - Round-robin per instance (M instances, each cycling from its own offset) leaves
 *   each sub-bucket within the floor/ceil of each instance's share, so for R = C the
 *   shortfall is never above M·N/4 + s(N − s)/N, s = C mod N (`roundRobinShortfallBound`).
 * - Retrying another sub-bucket on refusal (up to k tries) lowers the shortfall; with
 *   k = N it is 0 (a token anywhere is found), at the price of up to k calls for a
 *   refused request. `simulateSubBuckets` measures it.
 *
 * @example
 * const picker = randomPicker(seededRandom(1));
 * const i = picker.pick("rl:per-user:tb:user:42", 8);
 * subBucketKey("rl:per-user:tb:user:42", i);                                  // "rl:per-user:tb:user:42:5"
 * splitLimit({ algorithm: "token-bucket", capacity: 10, ratePerS: 4 }, 0, 4); // capacity 3, ratePerS 1
 */
import { int, type RandomSource } from "@casebook/kit/random";
import type { Limit } from "./algorithm.ts";

/** Bound on N: past 64 the per-sub-bucket quota and the shortfall make the split useless. */
export const MAX_SUB_BUCKETS = 64;

/**
 * Sub-bucket `index`'s integer share of `total` split `count` ways: the remainder goes
 * one by one to the first buckets, so the shares sum to `total` exactly.
 *
 * @example
 * [0, 1, 2].map((i) => shareOf(10, i, 3)); // [4, 3, 3]
 */
export function shareOf(total: number, index: number, count: number): number {
  const base = Math.floor(total / count);
  return base + (index < total % count ? 1 : 0);
}

/**
 * The limit of sub-bucket `index` of `count`: an integer share of the burst (capacity,
 * queueCapacity, limit, burst) and 1/count of the rate. Windows keep their length.
 *
 * @example
 * splitLimit({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 3, 8); // limit 12
 */
export function splitLimit(limit: Limit, index: number, count: number): Limit {
  if (!Number.isInteger(count) || count < 1 || count > MAX_SUB_BUCKETS) {
    throw new RangeError(`sub-bucket count must be an integer in [1, ${MAX_SUB_BUCKETS}], got ${count}`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= count)
    throw new RangeError(`sub-bucket index ${index} of ${count}`);
  switch (limit.algorithm) {
    case "token-bucket":
      return { ...limit, capacity: shareOf(limit.capacity, index, count), ratePerS: limit.ratePerS / count };
    case "leaky-bucket":
      return {
        ...limit,
        queueCapacity: shareOf(limit.queueCapacity, index, count),
        ratePerS: limit.ratePerS / count,
      };
    case "gcra":
      return { ...limit, burst: shareOf(limit.burst, index, count), ratePerS: limit.ratePerS / count };
    default:
      return { ...limit, limit: shareOf(limit.limit, index, count) };
  }
}

/**
 * The key of sub-bucket `index`: the base key plus `:index`. No hash tag joins them,
 * so sub-buckets land on different slots, which is the point.
 *
 * @example
 * subBucketKey("rl:p:tb:user:42", 3); // "rl:p:tb:user:42:3"
 */
export function subBucketKey(baseKey: string, index: number): string {
  return `${baseKey}:${index}`;
}

/** Chooses which sub-bucket a request spends from. */
export interface SubBucketPicker {
  pick(baseKey: string, count: number): number;
}

/**
 * Uniform random picking: stateless, the same on every instance.
 *
 * @example
 * randomPicker(seededRandom("t")).pick("k", 4); // 0..3
 */
export function randomPicker(random: RandomSource): SubBucketPicker {
  return { pick: (_baseKey, count) => int(random, count) };
}

/**
 * Round-robin per base key, per instance, starting at a random offset (so instances
 * do not all start on sub-bucket 0). Remembers at most `maxKeys` keys, least recently
 * used evicted first; an evicted key restarts at a fresh random offset.
 *
 * @example
 * const picker = new RoundRobinPicker({ random: seededRandom(1), maxKeys: 10_000 });
 * picker.pick("k", 4); picker.pick("k", 4); // consecutive sub-buckets, e.g. 2 then 3
 */
export class RoundRobinPicker implements SubBucketPicker {
  readonly #random: RandomSource;
  readonly #maxKeys: number;
  readonly #next = new Map<string, number>();

  constructor(options: { random: RandomSource; maxKeys: number }) {
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1)
      throw new RangeError("maxKeys must be >= 1");
    this.#random = options.random;
    this.#maxKeys = options.maxKeys;
  }

  pick(baseKey: string, count: number): number {
    const stored = this.#next.get(baseKey);
    const index = (stored ?? int(this.#random, count)) % count;
    // Re-insert to move the key to the most-recently-used end of the Map.
    this.#next.delete(baseKey);
    this.#next.set(baseKey, (index + 1) % count);
    if (this.#next.size > this.#maxKeys) this.#next.delete(this.#next.keys().next().value!);
    return index;
  }

  /** Keys currently remembered (≤ maxKeys). */
  get size(): number {
    return this.#next.size;
  }
}

// ---------------------------------------------------------------- stated error

/** Bound on the burst size the exact formulas accept (they are O(R) per sub-bucket). */
export const MAX_FORMULA_REQUESTS = 1_000_000;

function checkSplit(quota: number, subBuckets: number, requests: number): void {
  if (!Number.isInteger(quota) || quota < 1)
    throw new RangeError(`quota must be an integer >= 1, got ${quota}`);
  if (!Number.isInteger(subBuckets) || subBuckets < 1 || subBuckets > MAX_SUB_BUCKETS) {
    throw new RangeError(`subBuckets must be an integer in [1, ${MAX_SUB_BUCKETS}], got ${subBuckets}`);
  }
  if (!Number.isInteger(requests) || requests < 0 || requests > MAX_FORMULA_REQUESTS) {
    throw new RangeError(`requests must be an integer in [0, ${MAX_FORMULA_REQUESTS}], got ${requests}`);
  }
}

/** E|X − c| for X ~ Binomial(n, p), summed in log space so large n does not underflow. */
function binomialMeanAbsDeviation(n: number, p: number, c: number): number {
  if (p >= 1) return Math.abs(n - c);
  const logRatio = Math.log(p / (1 - p));
  let logPmf = n * Math.log1p(-p);
  let sum = 0;
  for (let k = 0; k <= n; k++) {
    sum += Math.exp(logPmf) * Math.abs(k - c);
    logPmf += Math.log((n - k) / (k + 1)) + logRatio;
  }
  return sum;
}

/**
 * Exact expected shortfall of a burst of `requests` (default: the quota) under
 * uniform random picking with no retry: E[min(R, C) − admitted].
 *
 * @example
 * expectedShortfall(1000, 16); // ≈ 48.6
 */
export function expectedShortfall(quota: number, subBuckets: number, requests = quota): number {
  checkSplit(quota, subBuckets, requests);
  let deviation = 0;
  for (let i = 0; i < subBuckets; i++) {
    deviation += binomialMeanAbsDeviation(requests, 1 / subBuckets, shareOf(quota, i, subBuckets));
  }
  return Math.max(0, deviation / 2 - Math.abs(requests - quota) / 2);
}

/**
 * The stated bound on the expected shortfall under random picking (Jensen on
 * E|X − c|): ½·Σ √(σ² + δ_i²) − ½·|R − C|; for R = C and N | C, ½·√(C(N − 1)).
 *
 * @example
 * randomShortfallBound(1000, 16); // ≈ 61.2
 */
export function randomShortfallBound(quota: number, subBuckets: number, requests = quota): number {
  checkSplit(quota, subBuckets, requests);
  const p = 1 / subBuckets;
  const variance = requests * p * (1 - p);
  let sum = 0;
  for (let i = 0; i < subBuckets; i++) {
    const delta = requests * p - shareOf(quota, i, subBuckets);
    sum += Math.sqrt(variance + delta * delta);
  }
  return Math.max(0, sum / 2 - Math.abs(requests - quota) / 2);
}

/**
 * The worst-case shortfall of a burst of exactly `quota` requests when each of
 * `instances` picks round-robin from its own offset: ⌊M·N/4 + s(N − s)/N⌋, s = C mod N.
 *
 * @example
 * roundRobinShortfallBound(1000, 8, 1); // 2
 */
export function roundRobinShortfallBound(quota: number, subBuckets: number, instances: number): number {
  checkSplit(quota, subBuckets, quota);
  if (!Number.isInteger(instances) || instances < 1)
    throw new RangeError(`instances must be >= 1, got ${instances}`);
  const s = quota % subBuckets;
  return Math.floor((instances * subBuckets) / 4 + (s * (subBuckets - s)) / subBuckets);
}

// ---------------------------------------------------------------- simulation

export interface SubBucketSimulation {
  readonly quota: number;
  readonly subBuckets: number;
  /** Requests in each burst; default = quota (where the shortfall is largest). */
  readonly requests?: number;
  readonly trials: number;
  readonly picking: "random" | "round-robin";
  /** Service instances, each with its own round-robin picker; requests go to one at random. Default 1. */
  readonly instances?: number;
  /** Tries per request: 1 = no retry; on refusal, untried sub-buckets are tried in random order. */
  readonly maxTries?: number;
  readonly random: RandomSource;
}

export interface SubBucketReport {
  readonly quota: number;
  readonly subBuckets: number;
  readonly requests: number;
  readonly maxTries: number;
  /** Most admitted in any trial: never above the quota (overshoot 0). */
  readonly allowedMax: number;
  readonly shortfallMean: number;
  readonly shortfallMax: number;
  /** Standard error of `shortfallMean`, to compare it with `expectedShortfall`. */
  readonly shortfallStdErr: number;
  /** Mean sub-bucket calls per request (1 without retries). */
  readonly triesMean: number;
}

/** Bound on trials × requests one simulation may run. */
export const MAX_SIMULATION_STEPS = 50_000_000;

function runBurst(sim: SubBucketSimulation, pickers: SubBucketPicker[], requests: number, maxTries: number) {
  const remaining = Array.from({ length: sim.subBuckets }, (_, i) => shareOf(sim.quota, i, sim.subBuckets));
  const order = remaining.map((_, i) => i);
  let allowed = 0;
  let tries = 0;
  for (let r = 0; r < requests; r++) {
    const picker = pickers[pickers.length === 1 ? 0 : int(sim.random, pickers.length)]!;
    const first = picker.pick("k", sim.subBuckets);
    // Partial Fisher–Yates over the untried sub-buckets: retries never repeat a bucket.
    [order[0], order[first]] = [order[first]!, order[0]!];
    for (let t = 0; t < maxTries; t++) {
      if (t > 0) {
        const j = t + int(sim.random, sim.subBuckets - t);
        [order[t], order[j]] = [order[j]!, order[t]!];
      }
      tries++;
      const bucket = order[t]!;
      if (remaining[bucket]! > 0) {
        remaining[bucket]! -= 1;
        allowed++;
        break;
      }
    }
    // Restore identity order cheaply enough for N ≤ 64.
    for (let i = 0; i < order.length; i++) order[i] = i;
  }
  return { allowed, tries };
}

/**
 * Measures admitted vs quota for bursts with no refill (the sub-buckets' worst case)
 * over `trials` seeded trials.
 *
 * @example
 * simulateSubBuckets({ quota: 1000, subBuckets: 8, trials: 200, picking: "random", random: seededRandom(9) });
 */
export function simulateSubBuckets(sim: SubBucketSimulation): SubBucketReport {
  const requests = sim.requests ?? sim.quota;
  const maxTries = Math.min(sim.maxTries ?? 1, sim.subBuckets);
  checkSplit(sim.quota, sim.subBuckets, requests);
  if (!Number.isInteger(maxTries) || maxTries < 1)
    throw new RangeError(`maxTries must be >= 1, got ${maxTries}`);
  if (sim.trials < 1 || sim.trials * requests * maxTries > MAX_SIMULATION_STEPS) {
    throw new RangeError(`trials × requests × maxTries must be in [1, ${MAX_SIMULATION_STEPS}]`);
  }
  const ideal = Math.min(requests, sim.quota);
  let allowedMax = 0;
  let shortfallMax = 0;
  let sum = 0;
  let sumSquares = 0;
  let tries = 0;
  for (let trial = 0; trial < sim.trials; trial++) {
    const instances = sim.picking === "random" ? 1 : (sim.instances ?? 1);
    const pickers: SubBucketPicker[] = Array.from({ length: instances }, () =>
      sim.picking === "random"
        ? randomPicker(sim.random)
        : new RoundRobinPicker({ random: sim.random, maxKeys: 1 }),
    );
    const burst = runBurst(sim, pickers, requests, maxTries);
    const shortfall = ideal - burst.allowed;
    allowedMax = Math.max(allowedMax, burst.allowed);
    shortfallMax = Math.max(shortfallMax, shortfall);
    sum += shortfall;
    sumSquares += shortfall * shortfall;
    tries += burst.tries;
  }
  const mean = sum / sim.trials;
  const variance = Math.max(0, sumSquares / sim.trials - mean * mean);
  return {
    quota: sim.quota,
    subBuckets: sim.subBuckets,
    requests,
    maxTries,
    allowedMax,
    shortfallMean: mean,
    shortfallMax,
    shortfallStdErr: Math.sqrt(variance / sim.trials),
    triesMean: tries / (sim.trials * requests),
  };
}
