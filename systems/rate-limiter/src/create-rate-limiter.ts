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
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { AdmissionGate } from "@casebook/kit/admission-gate";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { Limiter } from "./domain/limiter.ts";
import { LocalLimiter } from "./domain/local-limiter.ts";
import type { PolicyConfig } from "./domain/policy.ts";
import type { LimiterStore } from "./domain/store-port.ts";
import { randomPicker } from "./domain/sub-buckets.ts";
import {
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
  /**
   * Bound on Redis's silence during a store call (000 §1: "se o Redis não responde em 20 ms"):
   * the call falls back when no reply at all has come on its connection for this long —
   * Redis paused, hung, or the link dead — measured at the socket, never our own event
   * loop's delay (@casebook/infra/redis/reply-deadline). Default 200: the text's 20 ms is
   * shorter than the silences of a healthy Redis on a loaded host (README, "Failure").
   */
  readonly timeoutMs?: number;
  /**
   * Bound on one store call's whole wait while Redis keeps answering others (alive but
   * slow: a burst's queue on a loaded host); past it the call falls back too. Default 1 000.
   */
  readonly maxWaitMs?: number;
  /** Store decisions in flight in this process; past it checks queue (issue 12). Default 512. */
  readonly maxInFlight?: number;
  /** Checks waiting for a slot; past it a check is shed at once (RATELIMIT_OVERLOADED). Default 1 024. */
  readonly maxQueued?: number;
  /** Longest wait for a slot before a check is shed (RATELIMIT_OVERLOADED). Default 100. */
  readonly queueWaitMs?: number;
  /**
   * Heartbeat period of this instance in Redis (the live count behind fail-open's share);
   * an instance silent for 3 periods is no longer counted. Default 1 000.
   */
  readonly heartbeatMs?: number;
  /** Told how late a decision's deadline timer ran (the event loop's delay), in ms. */
  readonly onTimerLag?: (lagMs: number) => void;
  /**
   * How long start-up waits for the first Redis connection. It starts either way: until
   * Redis answers, decisions go by each policy's failMode (RL-11). Default 1 000.
   */
  readonly connectTimeoutMs?: number;
  /** Consecutive store failures that open the breaker (RL-13). Default 5. */
  readonly breakerFailures?: number;
  /** How long the breaker stays open before one probe. Default 1 000. */
  readonly breakerOpenMs?: number;
  /**
   * Fewest instances assumed to share the quota: fail-open holds quota / instances locally
   * (RL-11). The live count from the heartbeats replaces it when larger. Default 1.
   */
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
  /** The bound on decisions in flight (its counters feed /metrics). */
  readonly gate: AdmissionGate;
  /** Instances the fail-open share is divided by now: max(`instances`, live heartbeats). */
  instances(): number;
  close(): Promise<void>;
}

export const rateLimiterDefaults = {
  timeoutMs: 200,
  maxWaitMs: 1_000,
  connectTimeoutMs: 1_000,
  breakerFailures: 5,
  breakerOpenMs: 1_000,
  instances: 1,
  localMaxKeys: 100_000,
  maxInFlight: 512,
  maxQueued: 1_024,
  queueWaitMs: 100,
  heartbeatMs: 1_000,
} as const;

function openStore(options: RateLimiterOptions, clock: Clock, timeoutMs: number): Promise<LimiterStore> {
  const connection = {
    keyPrefix: options.keyPrefix,
    // Off: the reply deadline bounds every call (limiter-store.ts, DecisionDeadline).
    commandTimeoutMs: 0,
    replyDeadline: {
      timeoutMs,
      maxWaitMs: options.maxWaitMs ?? rateLimiterDefaults.maxWaitMs,
      onTimerLag: options.onTimerLag,
    },
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
  const gate = new AdmissionGate({
    maxInFlight: options.maxInFlight ?? rateLimiterDefaults.maxInFlight,
    maxQueued: options.maxQueued ?? rateLimiterDefaults.maxQueued,
    maxQueueWaitMs: options.queueWaitMs ?? rateLimiterDefaults.queueWaitMs,
    clock,
  });
  const limiter = new Limiter(options.policies, {
    store,
    breaker,
    local,
    gate,
    picker: randomPicker(options.random ?? systemRandom),
    unavailableRetryMs: options.breakerOpenMs ?? rateLimiterDefaults.breakerOpenMs,
    onStoreError: options.onStoreError,
  });
  const floor = options.instances ?? rateLimiterDefaults.instances;
  let live = 0;
  const heartbeat = startHeartbeat(store, options.heartbeatMs ?? rateLimiterDefaults.heartbeatMs, (count) => {
    live = count;
    local.setInstances(Math.max(floor, count));
  });
  return {
    limiter,
    store,
    breaker,
    gate,
    instances: () => Math.max(floor, live),
    close: async () => {
      await heartbeat?.stop();
      await store.close();
    },
  };
}

/**
 * Announces this instance in Redis every `periodMs` and reports the live count (RL-11's
 * share is 1 / count). The first beat runs at once; while Redis is away the last count
 * stays in force. On stop the instance withdraws, so the others' share grows at once.
 */
function startHeartbeat(
  store: LimiterStore,
  periodMs: number,
  onCount: (count: number) => void,
): { stop(): Promise<void> } | undefined {
  const announce = store.announce?.bind(store);
  if (!announce) return undefined;
  const id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const ttlMs = periodMs * 3;
  const loop = new BackgroundLoop({
    name: "rate-limiter instance heartbeat",
    round: async () => {
      onCount(await announce(id, ttlMs));
      return false;
    },
    idleMs: periodMs,
    failureBackoff: { capMs: periodMs, jitter: "none" },
    // Redis away: decisions already go by failMode; the count in force stays.
    onError: () => {},
  });
  loop.start();
  return {
    stop: async () => {
      await loop.stop();
      await store.withdraw?.(id).catch(() => {});
    },
  };
}
