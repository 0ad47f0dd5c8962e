/**
 * Where counters live: one interface, two engines. `RedisLimiterStore` runs the
 * `<algorithm>-n.lua` scripts on Redis (EVALSHA); the in-process store runs their
 * twins (src/store/script-twins.ts) on an in-process keyspace — the embedded default.
 * Both pass test/limiter-store.contract.test.ts.
 *
 * One `spend` is ONE round trip however many groups it carries (a pipeline), and
 * each group is ONE atomic script call over keys of one slot (RL-03, RL-08).
 *
 * On a Redis Cluster (`openRedisClusterLimiterStore`) a pipeline cannot span nodes, so
 * each group is its own EVALSHA, all sent at once (auto-pipelining coalesces those bound
 * for one node into one write): still one round trip per node, each group still one
 * atomic all-or-nothing call. The resolver groups keys by slot WITHOUT the connection's
 * keyPrefix; when a prefix splits a group over slots (untagged keys whose slots merely
 * coincided), the store sends one call per slot and refunds the parts that spent if
 * another part refused: RL-10's compensation, one level down.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import {
  closeRedis,
  connectRedis,
  connectRedisCluster,
  type RedisClusterConnectOptions,
  type RedisConnectOptions,
  redisConnectDefaults,
} from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { trackRedisReachability } from "@casebook/infra/redis/redis-reachability";
import {
  DeadlineScriptRunner,
  type ReplyDeadlineOptions,
  withReplyDeadline,
} from "@casebook/infra/redis/reply-deadline";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import type { Clock } from "@casebook/kit/clock";
import { keySlot } from "@casebook/kit/cluster-slot";
import type { Cluster, Redis } from "ioredis";
import type { Limit } from "../domain/algorithm.ts";
import { algorithms } from "../domain/algorithms.ts";
import type { GroupCall, GroupOutcome, KeyOutcome, LimiterStore } from "../domain/store-port.ts";
import { DecisionBatcher } from "./decision-batcher.ts";
import { scriptTwins } from "./script-twins.ts";

/** The sorted set of live instances (member id, score = last heartbeat, wall-clock ms). */
export const INSTANCES_KEY = "instances";

/**
 * One heartbeat as a MULTI (no script: Redis's script counters stay the decisions'):
 * stamp this instance, drop those silent for `ttlMs`, keep the set itself expiring.
 * Scores are the instances' own clocks: a skew between hosts shorter than ttlMs is harmless.
 */
async function announceOn(client: Redis | Cluster, id: string, ttlMs: number): Promise<number> {
  const nowMs = Date.now();
  const replies = await client
    .multi()
    .zadd(INSTANCES_KEY, nowMs, id)
    .zremrangebyscore(INSTANCES_KEY, "-inf", nowMs - ttlMs)
    .pexpire(INSTANCES_KEY, ttlMs * 2)
    .zcard(INSTANCES_KEY)
    .exec();
  const failed = replies?.find(([error]) => error !== null);
  if (!replies || failed) throw failed?.[0] ?? new Error("heartbeat MULTI was discarded");
  return Number(replies[3]![1]);
}

async function withdrawOn(client: Redis | Cluster, id: string): Promise<void> {
  await client.zrem(INSTANCES_KEY, id);
}

export const scriptsDir = fileURLToPath(new URL("./scripts/", import.meta.url));

function argsOf(group: GroupCall, mode: "spend" | "refund"): string[] {
  const algorithm = algorithms[group.algorithm] as { scriptArgs(l: Limit, c: number, id?: string): string[] };
  const perKey = group.keys.flatMap((_, i) =>
    algorithm.scriptArgs(group.limits[i]!, group.costs[i]!, group.requestId),
  );
  return [mode, ...perKey];
}

function scriptCall(group: GroupCall, mode: "spend" | "refund") {
  return { name: group.algorithm, keys: [...group.keys], args: argsOf(group, mode) };
}

/** One slot's share of a group, and where its keys sit in the group. */
interface SlotPart {
  readonly call: GroupCall;
  readonly indexes: readonly number[];
}

/** Splits a group by the slot each key really lands in; one part when they share it (always, with tags). */
function splitBySlot(group: GroupCall, slotOf: (key: string) => number): SlotPart[] {
  const bySlot = new Map<number, number[]>();
  group.keys.forEach((key, index) => {
    const slot = slotOf(key);
    const indexes = bySlot.get(slot);
    if (indexes) indexes.push(index);
    else bySlot.set(slot, [index]);
  });
  if (bySlot.size === 1) return [{ call: group, indexes: group.keys.map((_, index) => index) }];
  return [...bySlot.values()].map((indexes) => ({
    call: {
      ...group,
      keys: indexes.map((i) => group.keys[i]!),
      limits: indexes.map((i) => group.limits[i]!),
      costs: indexes.map((i) => group.costs[i]!),
    },
    indexes,
  }));
}

/** The group's outcome from its parts': allowed only if every part was; waits are the longest. */
function mergeParts(
  parts: readonly SlotPart[],
  outcomes: readonly GroupOutcome[],
  size: number,
): GroupOutcome {
  const keys: KeyOutcome[] = new Array(size);
  parts.forEach((part, j) => {
    part.indexes.forEach((index, k) => {
      keys[index] = outcomes[j]!.keys[k]!;
    });
  });
  const allowed = outcomes.every((outcome) => outcome.allowed);
  const refusals = outcomes.filter((outcome) => !outcome.allowed).map((outcome) => outcome.retryAfterMs);
  return {
    allowed,
    nowMs: Math.max(...outcomes.map((outcome) => outcome.nowMs)),
    retryAfterMs: allowed ? 0 : Math.max(...refusals),
    delayMs: Math.max(...outcomes.map((outcome) => outcome.delayMs)),
    keys,
  };
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
  readonly #slotOf: ((key: string) => number) | undefined;
  readonly #onError: (error: unknown) => void;
  readonly #batcher: DecisionBatcher | undefined;
  announce?: (id: string, ttlMs: number) => Promise<number>;
  withdraw?: (id: string) => Promise<void>;

  constructor(options: {
    engine: "redis" | "in-process";
    runner: ScriptRunner;
    ping: () => Promise<void>;
    close: () => Promise<void>;
    /**
     * Cluster mode: the slot a key lands in on the server (keyPrefix included). Groups
     * whose keys land in several slots are split per slot and compensated (see above).
     */
    slotOf?: (key: string) => number;
    /** Told about a failed compensation refund (the refusal stands; the limit is stricter for a while). */
    onError?: (error: unknown) => void;
    /** Batch single-key decisions of one event-loop turn into one script call (standalone Redis). */
    batchMaxKeys?: number;
    announce?: (id: string, ttlMs: number) => Promise<number>;
    withdraw?: (id: string) => Promise<void>;
  }) {
    this.engine = options.engine;
    this.#runner = options.runner;
    this.#ping = options.ping;
    this.#close = options.close;
    this.#slotOf = options.slotOf;
    this.#onError = options.onError ?? (() => {});
    if (options.announce) this.announce = options.announce;
    if (options.withdraw) this.withdraw = options.withdraw;
    if (options.batchMaxKeys !== undefined && options.batchMaxKeys > 1) {
      const runner = options.runner;
      this.#batcher = new DecisionBatcher((name, keys, args) => runner.run(name, keys, args), {
        maxKeys: options.batchMaxKeys,
      });
    }
  }

  async spend(groups: readonly GroupCall[]): Promise<GroupOutcome[]> {
    if (this.#slotOf) return this.#spendBySlot(groups, this.#slotOf);
    const batcher = this.#batcher;
    if (batcher) {
      // Groups are independent calls anyway (compensation happens above): single-key ones batch.
      return Promise.all(
        groups.map((group) =>
          group.keys.length === 1
            ? batcher.spend(group)
            : this.#runner.run(group.algorithm, [...group.keys], argsOf(group, "spend")).then(toOutcome),
        ),
      );
    }
    const calls = groups.map((group) => scriptCall(group, "spend"));
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
    const slotOf = this.#slotOf;
    // A refund gives each key its own units back: splitting it by slot changes nothing.
    const parts = slotOf ? groups.flatMap((group) => splitBySlot(group, slotOf).map((p) => p.call)) : groups;
    const settled = await this.#runner.runBatch(parts.map((group) => scriptCall(group, "refund")));
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  /** Cluster mode: every slot's part of every group in one concurrent batch, then merged back. */
  async #spendBySlot(groups: readonly GroupCall[], slotOf: (key: string) => number): Promise<GroupOutcome[]> {
    const split = groups.map((group) => splitBySlot(group, slotOf));
    const parts = split.flat();
    const settled = await this.#runner.runBatch(parts.map((part) => scriptCall(part.call, "spend")));
    const outcomes = settled.map((result) => {
      if (result.status === "rejected") throw result.reason;
      return toOutcome(result.value);
    });
    const perGroup: GroupOutcome[][] = [];
    let at = 0;
    for (const groupParts of split) {
      perGroup.push(outcomes.slice(at, at + groupParts.length));
      at += groupParts.length;
    }
    const merged = split.map((groupParts, i) =>
      groupParts.length === 1
        ? perGroup[i]![0]!
        : mergeParts(groupParts, perGroup[i]!, groups[i]!.keys.length),
    );
    // A split group must stay all-or-nothing: give back what its passing parts spent.
    const spentInRefused = split.flatMap((groupParts, i) =>
      groupParts.length > 1 && !merged[i]!.allowed
        ? groupParts.filter((_, j) => perGroup[i]![j]!.allowed).map((part) => part.call)
        : [],
    );
    if (spentInRefused.length > 0) await this.refund(spentInRefused).catch(this.#onError);
    return merged;
  }

  ping(): Promise<void> {
    return this.#ping();
  }

  close(): Promise<void> {
    return this.#close();
  }
}

/**
 * The decision timeout, measured at the socket (see reply-deadline.ts): a call times out
 * only when Redis's reply had not arrived `timeoutMs` after the write, never because our
 * event loop was busy. Give the connection `commandTimeoutMs: 0` then: ioredis's own timer
 * has the flaw the deadline avoids (checked before the socket is read, it fires on our lag
 * — at a 3 000-request burst a 2 s backstop still tripped). A command Redis never answers
 * stays queued in the client until the connection drops; the breaker bounds how many.
 */
export interface DecisionDeadline {
  replyDeadline?: ReplyDeadlineOptions;
}

export interface RedisStoreOptions extends RedisConnectOptions, DecisionDeadline {
  url: string;
  /**
   * Decisions per batched script call (see decision-batcher.ts); 1 turns batching off.
   * Default 8: small batches keep several calls in flight, so Node encodes the next while
   * Redis runs the last. Measured with 50 concurrent callers on 2 cores: 1 → 40k/s,
   * 8 → 123k/s, 64 → 58k/s (one big batch leaves Node and Redis taking turns).
   */
  batchMaxKeys?: number;
  /**
   * Told once, in plain words, when Redis does not answer within `connectTimeoutMs` at
   * start ("redis at 127.0.0.1:6379 not reachable: connection refused"); the store keeps
   * connecting in the background and decisions go by failMode meanwhile.
   */
  onUnreachableAtStart?: (message: string) => void;
}

/**
 * A store on one Redis. It never waits for Redis to start: the connection is made in
 * the background (and remade after every loss), calls fail fast while it is down, and
 * the limiter answers by policy meanwhile (RL-11/RL-12) — an instance started during an
 * outage serves fail-open reads instead of crash-looping. Scripts load on first use
 * (EVALSHA falls back to EVAL on NOSCRIPT, which also covers a restarted, empty Redis).
 */
export async function openRedisLimiterStore(options: RedisStoreOptions): Promise<LimiterStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const redis: Redis = await connectRedis({ ...options, lazyConnect: true });
  const reach = trackRedisReachability(redis);
  const connectTimeoutMs = options.connectTimeoutMs ?? redisConnectDefaults.connectTimeoutMs;
  if (!(await firstConnection(redis, connectTimeoutMs)))
    options.onUnreachableAtStart?.(reach.unreachable(`no connection within ${connectTimeoutMs} ms`));
  return new ScriptLimiterStore({
    engine: "redis",
    runner: withDeadline(new RedisScriptRunner(redis, registry), options.replyDeadline),
    batchMaxKeys: options.batchMaxKeys ?? 8,
    announce: (id, ttlMs) => bounded(() => announceOn(redis, id, ttlMs)),
    withdraw: (id) => bounded(() => withdrawOn(redis, id)),
    // /readyz: "redis at host:port not reachable: connection refused", not the client's state.
    ping: () => bounded(() => reach.ping()),
    close: () => closeRedis(redis),
  });
}

/** ioredis rejects a command that outlived `commandTimeout` with exactly this message. */
function isCommandTimeout(error: unknown): boolean {
  return (
    redisErrors.is(error, "REDIS_TIMEOUT") ||
    (error instanceof Error && error.message === "Command timed out")
  );
}

/**
 * Bound on the calls beside the decisions (heartbeat, readiness ping) when the connection's
 * own command timeout is off (see DecisionDeadline): a paused Redis must not hang them.
 */
const SIDE_CALL_TIMEOUT_MS = 1_000;

function bounded<T>(call: () => Promise<T>): Promise<T> {
  return withReplyDeadline(call, { timeoutMs: SIDE_CALL_TIMEOUT_MS });
}

function withDeadline(runner: ScriptRunner, deadline: ReplyDeadlineOptions | undefined): ScriptRunner {
  return deadline ? new DeadlineScriptRunner(runner, deadline) : runner;
}

export interface RedisClusterStoreOptions extends RedisClusterConnectOptions, DecisionDeadline {
  /** Check every call's keys share one slot before sending (they always should). Default true. */
  clusterSlots?: boolean;
  /** As RedisStoreOptions.onUnreachableAtStart, for the cluster's seed nodes. */
  onUnreachableAtStart?: (message: string) => void;
}

/**
 * Connects to a Redis Cluster, loads the scripts on every node, and answers with a store:
 * each group one EVALSHA on its slot's node, all groups of a request sent at once
 * (auto-pipelined per node). Give keys checked together one hash tag (RL-08).
 *
 * @example
 * const store = await openRedisClusterLimiterStore({
 *   nodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"],
 *   commandTimeoutMs: 20,
 * });
 */
export async function openRedisClusterLimiterStore(options: RedisClusterStoreOptions): Promise<LimiterStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir, { clusterSlots: options.clusterSlots ?? true });
  const cluster: Cluster = await connectRedisCluster({ autoPipelining: true, ...options, lazyConnect: true });
  try {
    // Like one Redis: never wait for the cluster to come up (RL-11). The first connection
    // is also bounded by the decision timeout (its CLUSTER INFO ready check is a command),
    // so on a loaded host it may take a reconnect or two; decisions go by policy meanwhile.
    const connectTimeoutMs = options.connectTimeoutMs ?? redisConnectDefaults.connectTimeoutMs;
    if (await firstConnection(cluster, connectTimeoutMs))
      await withReplyDeadline(() => registry.loadAll(cluster), { timeoutMs: connectTimeoutMs });
    else
      options.onUnreachableAtStart?.(
        trackRedisReachability(cluster).unreachable(`no cluster connection within ${connectTimeoutMs} ms`),
      );
  } catch (error) {
    // The command timeout bounds decisions (20 ms), not start-up: a SCRIPT LOAD that timed out
    // on a loaded node is not fatal, since a script missing there is sent once with EVAL
    // (NOSCRIPT fallback). Any other failure (ACL, a SHA1 mismatch) is.
    if (!isCommandTimeout(error)) {
      await closeRedis(cluster);
      throw error;
    }
    options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
  const prefix = options.keyPrefix ?? "";
  return new ScriptLimiterStore({
    engine: "redis",
    runner: withDeadline(new RedisScriptRunner(cluster, registry), options.replyDeadline),
    announce: (id, ttlMs) => bounded(() => announceOn(cluster, id, ttlMs)),
    withdraw: (id) => bounded(() => withdrawOn(cluster, id)),
    slotOf: (key) => keySlot(prefix + key),
    onError: (error) => options.onError?.(error instanceof Error ? error : new Error(String(error))),
    // Ready means every primary answers: each one holds a share of the limits. Before the
    // first slot map the client knows no primary at all, and that is not ready either.
    ping: async () => {
      if (cluster.status !== "ready") {
        throw redisErrors.create("REDIS_UNAVAILABLE", {
          detail: `The Redis Cluster client is ${cluster.status}, not ready.`,
          fields: { phase: "ping" },
        });
      }
      await bounded(() => Promise.all(cluster.nodes("master").map((node) => node.ping())));
    },
    close: () => closeRedis(cluster),
  });
}

/**
 * Starts the client's first connection and waits for it within `timeoutMs`, but never
 * fails: after a failed first attempt the client keeps reconnecting with its bounded
 * backoff, and the limiter answers by policy meanwhile. True if connected in time.
 */
async function firstConnection(client: Redis | Cluster, timeoutMs?: number): Promise<boolean> {
  const connected = client.connect().then(
    () => true,
    () => false,
  );
  const waited = new AbortController();
  const gaveUp = sleep(timeoutMs ?? redisConnectDefaults.connectTimeoutMs, false, { signal: waited.signal });
  try {
    return await Promise.race([connected, gaveUp]);
  } finally {
    waited.abort();
  }
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
