/**
 * Where counters live: one interface, two engines. `RedisLimiterStore` runs the
 * `<algorithm>-n.lua` scripts on Redis (EVALSHA); the in-process store runs their
 * twins (src/store/script-twins.ts) on an in-process keyspace — the embedded default.
 * Both pass test/limiter-store.contract.test.ts.
 *
 * One `spend` is ONE round trip however many groups it carries (a pipeline), and
 * each group is ONE atomic script call over keys of one slot (RL-03, RL-08).
 */
import { fileURLToPath } from "node:url";
import { closeRedis, connectRedis, type RedisConnectOptions } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import type { Clock } from "@casebook/kit/clock";
import type { Redis } from "ioredis";
import { type AlgorithmName, algorithms, type Limit } from "../domain/algorithm.ts";
import { scriptTwins } from "./script-twins.ts";

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
}

export const scriptsDir = fileURLToPath(new URL("./scripts/", import.meta.url));

function argsOf(group: GroupCall, mode: "spend" | "refund"): string[] {
  const algorithm = algorithms[group.algorithm] as { scriptArgs(l: Limit, c: number, id?: string): string[] };
  const perKey = group.keys.flatMap((_, i) =>
    algorithm.scriptArgs(group.limits[i]!, group.costs[i]!, group.requestId),
  );
  return [mode, ...perKey];
}

function toOutcome(reply: unknown): GroupOutcome {
  const values = (reply as unknown[]).map(Number);
  const [allowed, nowMs, retryAfterMs, delayMs] = values;
  const keys: KeyOutcome[] = [];
  for (let at = 4; at + 2 < values.length; at += 3) {
    keys.push({ allowed: values[at] === 1, remaining: values[at + 1]!, resetMs: values[at + 2]! });
  }
  return { allowed: allowed === 1, nowMs: nowMs!, retryAfterMs: retryAfterMs!, delayMs: delayMs!, keys };
}

/** A LimiterStore over any ScriptRunner: the code is identical on both engines. */
export class ScriptLimiterStore implements LimiterStore {
  readonly engine: "redis" | "in-process";
  readonly #runner: ScriptRunner;
  readonly #ping: () => Promise<void>;
  readonly #close: () => Promise<void>;

  constructor(options: {
    engine: "redis" | "in-process";
    runner: ScriptRunner;
    ping: () => Promise<void>;
    close: () => Promise<void>;
  }) {
    this.engine = options.engine;
    this.#runner = options.runner;
    this.#ping = options.ping;
    this.#close = options.close;
  }

  async spend(groups: readonly GroupCall[]): Promise<GroupOutcome[]> {
    const calls = groups.map((group) => ({
      name: group.algorithm,
      keys: [...group.keys],
      args: argsOf(group, "spend"),
    }));
    if (calls.length === 1)
      return [toOutcome(await this.#runner.run(calls[0]!.name, calls[0]!.keys, calls[0]!.args))];
    const settled = await this.#runner.runBatch(calls);
    return settled.map((result) => {
      if (result.status === "rejected") throw result.reason;
      return toOutcome(result.value);
    });
  }

  async refund(groups: readonly GroupCall[]): Promise<void> {
    if (groups.length === 0) return;
    const calls = groups.map((group) => ({
      name: group.algorithm,
      keys: [...group.keys],
      args: argsOf(group, "refund"),
    }));
    const settled = await this.#runner.runBatch(calls);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  ping(): Promise<void> {
    return this.#ping();
  }

  close(): Promise<void> {
    return this.#close();
  }
}

export interface RedisStoreOptions extends RedisConnectOptions {
  url: string;
}

/** Connects to Redis, loads the scripts, and answers with a store (auto-pipelined: one call per request). */
export async function openRedisLimiterStore(options: RedisStoreOptions): Promise<LimiterStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const redis: Redis = await connectRedis({ autoPipelining: true, ...options });
  await registry.loadAll(redis);
  return new ScriptLimiterStore({
    engine: "redis",
    runner: new RedisScriptRunner(redis, registry),
    ping: async () => {
      await redis.ping();
    },
    close: () => closeRedis(redis),
  });
}

/** The embedded engine: the scripts' twins on an in-process keyspace with the given clock. */
export async function openInProcessLimiterStore(options: {
  clock: Clock;
  maxKeys?: number;
}): Promise<LimiterStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const keyspace = new InProcessKeyspace({ clock: options.clock, maxKeys: options.maxKeys ?? 1_000_000 });
  return new ScriptLimiterStore({
    engine: "in-process",
    runner: new InProcessScriptRunner({ registry, twins: scriptTwins, keyspace }),
    ping: async () => {},
    close: async () => {},
  });
}
