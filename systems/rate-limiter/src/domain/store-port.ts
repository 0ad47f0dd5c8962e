/**
 * The store port: what the limiter (domain/limiter.ts) needs from wherever counters live,
 * declared here so the domain depends on no engine. store/limiter-store.ts implements it
 * twice (Redis scripts, the in-process twins); both pass test/limiter-store.contract.test.ts.
 *
 * One `spend` is ONE round trip however many groups it carries, and each group is ONE
 * atomic all-or-nothing call over keys of one slot (RL-03, RL-08).
 */
import type { AlgorithmName, Limit } from "./algorithm.ts";

/** Keys of one algorithm in one slot, checked all-or-nothing by one script call. */
export interface GroupCall {
  readonly algorithm: AlgorithmName;
  readonly keys: readonly string[];
  readonly limits: readonly Limit[];
  readonly costs: readonly number[];
  /** Unique per request: the sliding-window log stores one member per admitted unit. */
  readonly requestId: string;
}

export interface KeyOutcome {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
}

export interface GroupOutcome {
  readonly allowed: boolean;
  /** The engine's clock at the decision (Redis TIME), never the caller's. */
  readonly nowMs: number;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  readonly keys: readonly KeyOutcome[];
}

export interface LimiterStore {
  readonly engine: "redis" | "in-process";
  /** Spends every group in one round trip; each group all-or-nothing. Rejects when the engine fails. */
  spend(groups: readonly GroupCall[]): Promise<GroupOutcome[]>;
  /** Gives back what `spend` took (a later group refused: RL-10's compensation). */
  refund(groups: readonly GroupCall[]): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Heartbeat (Redis engines only): records instance `id` as alive for `ttlMs` and answers
   * how many instances are alive — the real count behind fail-open's share (RL-11).
   */
  announce?(id: string, ttlMs: number): Promise<number>;
  /** Removes `id` from the live instances (a graceful stop), so the others' share grows at once. */
  withdraw?(id: string): Promise<void>;
}
