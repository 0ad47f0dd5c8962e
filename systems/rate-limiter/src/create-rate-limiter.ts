/**
 * The library entry: everything a Node service needs to limit its own routes, or
 * what the rate-limiter service composes in main.ts. Redis when `redisUrl` is set
 * (shared by every instance), the in-process engine otherwise.
 *
 * @example
 * const rl = await createRateLimiter({ policies: parsePolicyConfig(yamlObject), redisUrl: process.env.REDIS_URL });
 * const result = await rl.limiter.check({ descriptor: descriptor({ ip, user, route }), requestId });
 * await rl.close();
 */
import { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { Limiter } from "./domain/limiter.ts";
import { LocalLimiter } from "./domain/local-limiter.ts";
import type { PolicyConfig } from "./domain/policy.ts";
import { randomPicker } from "./domain/sub-buckets.ts";
import {
  type LimiterStore,
  openInProcessLimiterStore,
  openRedisClusterLimiterStore,
  openRedisLimiterStore,
} from "./store/limiter-store.ts";

export interface RateLimiterOptions {
  readonly policies: PolicyConfig;
  /** Shared Redis; omit (and `redisClusterNodes`) for the in-process engine (one instance only). */
  readonly redisUrl?: string;
  /** A Redis Cluster's seed nodes (`redis://host:port`); limits of one request share a slot via hash tags. */
  readonly redisClusterNodes?: readonly string[];
  /** Prefix of every Redis key (several deployments on one Redis). */
  readonly keyPrefix?: string;
  /** Bound on one store call (000 §1: "se o Redis não responde em 20 ms"). Default 20. */
  readonly timeoutMs?: number;
  /**
   * How long start-up waits for the first Redis connection. It starts either way: until
   * Redis answers, decisions go by each policy's failMode (RL-11). Default 1 000.
   */
  readonly connectTimeoutMs?: number;
  /** Consecutive store failures that open the breaker (RL-13). Default 5. */
  readonly breakerFailures?: number;
  /** How long the breaker stays open before one probe. Default 1 000. */
  readonly breakerOpenMs?: number;
  /** Instances sharing the quota: fail-open holds quota / instances locally (RL-11). Default 1. */
  readonly instances?: number;
  /** Bound on local fallback buckets (LRU). Default 100 000. */
  readonly localMaxKeys?: number;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  /** Told when the store fails; the request is still answered by policy. */
  readonly onStoreError?: (error: unknown) => void;
  /** Told once, in plain words, when Redis does not answer at start (it starts anyway). */
  readonly onUnreachableAtStart?: (message: string) => void;
}

export interface RateLimiter {
  readonly limiter: Limiter;
  readonly store: LimiterStore;
  readonly breaker: CircuitBreaker;
  close(): Promise<void>;
}

export const rateLimiterDefaults = {
  timeoutMs: 20,
  connectTimeoutMs: 1_000,
  breakerFailures: 5,
  breakerOpenMs: 1_000,
  instances: 1,
  localMaxKeys: 100_000,
} as const;

function openStore(options: RateLimiterOptions, clock: Clock, timeoutMs: number): Promise<LimiterStore> {
  const connection = {
    keyPrefix: options.keyPrefix,
    commandTimeoutMs: timeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? rateLimiterDefaults.connectTimeoutMs,
    connectionName: "casebook-rate-limiter",
    onUnreachableAtStart: options.onUnreachableAtStart,
  };
  if (options.redisClusterNodes && options.redisClusterNodes.length > 0) {
    return openRedisClusterLimiterStore({ nodes: [...options.redisClusterNodes], ...connection });
  }
  if (options.redisUrl) return openRedisLimiterStore({ url: options.redisUrl, ...connection });
  return openInProcessLimiterStore({ clock });
}

export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const clock = options.clock ?? systemClock;
  const timeoutMs = options.timeoutMs ?? rateLimiterDefaults.timeoutMs;
  const store = await openStore(options, clock, timeoutMs);
  const breaker = new CircuitBreaker({
    name: "rate-limiter-store",
    clock,
    failureThreshold: options.breakerFailures ?? rateLimiterDefaults.breakerFailures,
    openDurationMs: options.breakerOpenMs ?? rateLimiterDefaults.breakerOpenMs,
    maxProbes: 1,
  });
  const local = new LocalLimiter({
    clock,
    maxKeys: options.localMaxKeys ?? rateLimiterDefaults.localMaxKeys,
    instances: options.instances ?? rateLimiterDefaults.instances,
  });
  const limiter = new Limiter(options.policies, {
    store,
    breaker,
    local,
    picker: randomPicker(options.random ?? systemRandom),
    unavailableRetryMs: options.breakerOpenMs ?? rateLimiterDefaults.breakerOpenMs,
    onStoreError: options.onStoreError,
  });
  return { limiter, store, breaker, close: () => store.close() };
}
