/**
 * The contenders, each one way of answering "may user U make one more request?"
 * against the same Redis. Equal work (issue 12): the peer's Redis limiter is a fixed-window
 * counter, so ours is compared with it on OUR fixed window at the same limit (10 per 2 s),
 * hence the same admitted share, and on an all-admitted limit (every decision writes);
 * our token bucket (10, refilled at 5/s) is reported on its own.
 *
 * - ours, `Limiter.check`: the real decision path (policy resolution, in-flight bound,
 *   breaker, store with its reply deadline, compensation, the fallback's mirror), as shipped;
 * - ours, bare `store.spend`: one `<algorithm>-n.lua` call, nothing around it;
 * - the peer, rate-limiter-flexible's `RateLimiterRedis.consume` (a fixed window), on an
 *   ioredis client configured like ours (connectRedis) as its docs recommend: no offline queue;
 * - the floor, the design text's script (bench/seed-token-bucket.lua): one EVALSHA.
 *
 * A refusal is a decision, not an error: `decide` resolves false. It rejects only
 * when Redis failed, so the load generator counts it as an error.
 *
 * @example
 * const peer = await openPeer(target, benchFixedWindow);
 * await peer.decide("user-42"); // true: allowed
 */
import { readFile } from "node:fs/promises";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { AdmissionGate } from "@casebook/kit/admission-gate";
import { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { systemClock } from "@casebook/kit/clock";
import { int, type RandomSource, seededRandom } from "@casebook/kit/random";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimiterDefaults } from "../src/create-rate-limiter.ts";
import type { AlgorithmName, FixedWindowLimit, Limit, TokenBucketLimit } from "../src/domain/algorithm.ts";
import { descriptor } from "../src/domain/descriptors.ts";
import { Limiter } from "../src/domain/limiter.ts";
import { LocalLimiter } from "../src/domain/local-limiter.ts";
import { type PolicyConfig, parsePolicyConfig, resolveLimits } from "../src/domain/policy.ts";
import type { LimiterStore } from "../src/domain/store-port.ts";
import { randomPicker } from "../src/domain/sub-buckets.ts";
import { openRedisLimiterStore } from "../src/store/limiter-store.ts";
import { benchErrors } from "./bench-errors.ts";
import type { RedisTarget } from "./redis-target.ts";

/** Our token bucket per user: a burst of 10, 5 per second on average (reported on its own). */
export const benchLimit: TokenBucketLimit = { algorithm: "token-bucket", capacity: 10, ratePerS: 5 };

/** The equal-work limit, ours and the peer's: 10 per fixed window of 2 s. */
export const benchFixedWindow: FixedWindowLimit = { algorithm: "fixed-window", limit: 10, windowMs: 2_000 };

/** The same window with a limit no run reaches: every decision admitted (and written). */
export const benchAllAdmitted: FixedWindowLimit = {
  algorithm: "fixed-window",
  limit: 1_000_000,
  windowMs: 2_000,
};

export const peerName = "rate-limiter-flexible";

export interface Contender {
  readonly name: string;
  /** Resolves true when allowed, false when limited; rejects when the engine failed. */
  decide(user: string): Promise<boolean>;
  /** The full Redis key (prefix included) holding `user`'s state, for MEMORY USAGE. */
  keyOf(user: string): string;
  close(): Promise<void>;
}

/** Users picked uniformly from a fixed population with a seeded source: every contender sees the same sequence. */
export class UserPicker {
  readonly #users: number;
  readonly #random: RandomSource;

  constructor(users: number, seed = 0x5eed) {
    this.#users = users;
    this.#random = seededRandom(seed);
  }

  next(): string {
    return `user-${int(this.#random, this.#users)}`;
  }
}

/** One policy, "per-user", keyed by the user: what a service would configure for this limit. */
export function benchPolicy(domain: string, limit: Limit): PolicyConfig {
  return parsePolicyConfig({ domain, policies: [{ name: "per-user", key: "user:{user}", limit }] });
}

/** A Limiter wired as src/main.ts would wire it (in-flight bound included), over `store`. */
export function benchLimiter(config: PolicyConfig, store: LimiterStore): Limiter {
  return new Limiter(config, {
    store,
    gate: new AdmissionGate({
      maxInFlight: rateLimiterDefaults.maxInFlight,
      maxQueued: rateLimiterDefaults.maxQueued,
      maxQueueWaitMs: rateLimiterDefaults.queueWaitMs,
      clock: systemClock,
    }),
    breaker: new CircuitBreaker({
      name: "bench-store",
      clock: systemClock,
      failureThreshold: 5,
      openDurationMs: 1_000,
    }),
    local: new LocalLimiter({ clock: systemClock, maxKeys: 100_000, instances: 1 }),
    picker: randomPicker(seededRandom(1)),
    unavailableRetryMs: 1_000,
  });
}

/** `Limiter.check` as a contender; a fallback answer (the store failed) rejects, it did not measure Redis. */
export function limiterContender(
  name: string,
  limiter: Limiter,
  keyPrefix: string,
  close: () => Promise<void>,
) {
  let sequence = 0;
  return {
    name,
    decide: async (user: string) => {
      const result = await limiter.check({ descriptor: descriptor({ user }), requestId: `r${++sequence}` });
      if (result.degraded)
        throw benchErrors.create("RATELIMIT_BENCH_DEGRADED", { fields: { contender: name } });
      return result.outcome === "allowed";
    },
    keyOf: (user: string) => keyPrefix + resolveLimits(limiter.config, descriptor({ user })).limits[0]!.key,
    close,
  } satisfies Contender;
}

/** The store's reply deadline as createRateLimiter sets it (ioredis's own timer off). */
const shippedDeadline = {
  commandTimeoutMs: 0,
  replyDeadline: { timeoutMs: rateLimiterDefaults.timeoutMs, maxWaitMs: rateLimiterDefaults.maxWaitMs },
};

/**
 * Ours through the full decision path. `batching` undefined = as shipped by
 * openRedisLimiterStore (script-level batching on); false = one script call per decision.
 */
export async function openOursLimiter(
  target: RedisTarget,
  options: { domain: string; batching?: boolean; limit?: Limit },
): Promise<Contender> {
  const store = await openRedisLimiterStore({
    url: target.url,
    keyPrefix: target.keyPrefix,
    connectionName: `bench-${options.domain}`,
    ...shippedDeadline,
    ...(options.batching === false ? { batchMaxKeys: 1 } : {}),
  });
  const limit = options.limit ?? benchLimit;
  const limiter = benchLimiter(benchPolicy(options.domain, limit), store);
  const name = `ours: Limiter.check (${limit.algorithm})${options.batching === false ? ", unbatched" : ""}`;
  return limiterContender(name, limiter, target.keyPrefix, () => store.close());
}

/** Ours without the Limiter around it: one `store.spend` of one token-bucket key per decision. */
export async function openOursStore(
  target: RedisTarget,
  options: {
    namespace: string;
    algorithm?: AlgorithmName;
    limit?: Limit;
    /** Undefined = as shipped (batched); false = one call per decision; ignored when `store` is given. */
    batching?: boolean;
    /** Another engine (the in-process store); default a Redis store on the target. */
    store?: LimiterStore;
  },
): Promise<Contender> {
  const store =
    options.store ??
    (await openRedisLimiterStore({
      url: target.url,
      keyPrefix: target.keyPrefix,
      connectionName: `bench-${options.namespace}`,
      ...shippedDeadline,
      ...(options.batching === false ? { batchMaxKeys: 1 } : {}),
    }));
  const algorithm = options.algorithm ?? "token-bucket";
  const limits = [options.limit ?? benchLimit];
  const unbatched = options.batching === false && !options.store ? ", unbatched" : "";
  let sequence = 0;
  return {
    name: `ours: store.spend (${algorithm})${unbatched}`,
    decide: async (user) => {
      const [outcome] = await store.spend([
        {
          algorithm,
          keys: [`${options.namespace}:${user}`],
          limits,
          costs: [1],
          requestId: `r${++sequence}`,
        },
      ]);
      return outcome!.allowed;
    },
    keyOf: (user) => `${target.keyPrefix}${options.namespace}:${user}`,
    close: () => store.close(),
  };
}

/** rate-limiter-flexible's RateLimiterRedis: a fixed window of `limit.limit` points per `limit.windowMs`. */
export async function openPeer(
  target: RedisTarget,
  limit: FixedWindowLimit = benchFixedWindow,
): Promise<Contender> {
  const durationS = limit.windowMs / 1_000;
  if (!Number.isInteger(durationS))
    throw new RangeError(`peer window must be whole seconds, got ${durationS}`);
  const client = await connectRedis({
    url: target.url,
    keyPrefix: target.keyPrefix,
    connectionName: "bench-peer",
  });
  const peer = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `rlflx${limit.limit}`,
    points: limit.limit,
    duration: durationS,
    // ioredis: its defineCommand + EVALSHA path, not node-redis's `eval({ keys })` signature.
    useRedisPackage: false,
  });
  return {
    name: peerName,
    decide: (user) =>
      peer.consume(user).then(
        () => true,
        (rejection: unknown) => {
          if (rejection instanceof RateLimiterRes) return false; // limited: a decision
          throw rejection;
        },
      ),
    keyOf: (user) => target.keyPrefix + peer.getKey(user),
    close: () => closeRedis(client),
  };
}

export const seedScriptUrl = new URL("./seed-token-bucket.lua", import.meta.url);

/** The floor: the text's script by EVALSHA, one round trip and nothing else per decision. */
export async function openSeedFloor(
  target: RedisTarget,
  limit: TokenBucketLimit = benchLimit,
): Promise<Contender> {
  const lua = await readFile(seedScriptUrl, "utf8");
  const client = await connectRedis({
    url: target.url,
    keyPrefix: target.keyPrefix,
    connectionName: "bench-seed",
  });
  const sha = String(await client.script("LOAD", lua));
  return {
    name: "floor: seed EVALSHA, ioredis",
    decide: async (user) => {
      const reply = (await client.evalsha(
        sha,
        1,
        `seed:${user}`,
        limit.capacity,
        limit.ratePerS,
        1,
      )) as number[];
      return reply[0] === 1;
    },
    keyOf: (user) => `${target.keyPrefix}seed:${user}`,
    close: () => closeRedis(client),
  };
}
