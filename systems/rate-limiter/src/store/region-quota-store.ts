/**
 * RL-14: one region's share of multi-region quotas, in THAT region's Redis. One hash
 * per (policy, subject), `rq:{policy:subject}`, holds the share the rebalancer
 * published and the region's current window (see src/domain/regional-limit.ts). The
 * request path calls `spend` (one script, one round trip, local only); the rebalancer
 * calls `closeWindows` and `publishShares` on every region, one pipelined batch each.
 *
 * Two engines behind one interface, as for LimiterStore: the Lua scripts of
 * src/store/scripts/region-quota/ on Redis, and their twins (below, built on the same
 * domain functions) on an in-process keyspace. The scripts live in a folder of their
 * own because the limiter's `scripts/` folder is loaded whole by LimiterStore, whose
 * in-process runner demands a twin for every script it finds there.
 *
 * @example
 * const store = await openRedisRegionQuotaStore({ region: "eu-west", url: process.env.REDIS_URL });
 * const limit = regionalLimitOf(quota, "eu-west");
 * const d = await store.spend({ policy: "plan", subject: "key:42" }, 1, limit);
 * if (!d.allowed) reply429(d.retryAfterMs);
 */
import { fileURLToPath } from "node:url";
import { closeRedis, connectRedis, type RedisConnectOptions } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import type { LuaReply } from "@casebook/infra/redis/lua-reply";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
  type ScriptTwin,
} from "@casebook/infra/redis/script-runner";
import type { Clock } from "@casebook/kit/clock";
import {
  type ClosedWindow,
  closeRegionalWindow,
  decideRegional,
  publishRegionalShare,
  type RegionalLimit,
  type RegionalState,
  regionalFromStored,
  regionalToStored,
} from "../domain/regional-limit.ts";

/** What a multi-region quota is counted for: a policy and the subject it limits (an API key). */
export interface QuotaKey {
  readonly policy: string;
  readonly subject: string;
}

/** The region's answer to one request. */
export interface RegionalSpend {
  readonly allowed: boolean;
  /** The region's Redis clock at the decision. */
  readonly nowMs: number;
  /** Share in force: published by the rebalancer, or the static split's. */
  readonly shareUnits: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly epoch: number;
}

/** A closed window, as the rebalancer reads it. */
export interface RegionalClose extends ClosedWindow {
  readonly nowMs: number;
}

export interface ShareUpdate {
  readonly key: QuotaKey;
  /** The window the share is for: `nextEpoch` of the close. */
  readonly epoch: number;
  readonly shareUnits: number;
}

export interface PublishOutcome {
  readonly applied: boolean;
  /** The key's current epoch (-1 when it has none). */
  readonly epoch: number;
}

export interface RegionQuotaStore {
  readonly region: string;
  readonly engine: "redis" | "in-process";
  /** The request path: decides `cost` units against this region's share. Rejects when the engine fails. */
  spend(key: QuotaKey, cost: number, limit: RegionalLimit): Promise<RegionalSpend>;
  /** Closes each key's window (one round trip per `maxKeysPerBatch`); one result per key, in order. */
  closeWindows(keys: readonly QuotaKey[]): Promise<PromiseSettledResult<RegionalClose>[]>;
  /** Publishes shares (compare-and-set on the epoch); one result per update, in order. */
  publishShares(updates: readonly ShareUpdate[]): Promise<PromiseSettledResult<PublishOutcome>[]>;
  /** The stored state of each key (undefined: none yet), for operators and tests. */
  readStates(keys: readonly QuotaKey[]): Promise<PromiseSettledResult<RegionalState | undefined>[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Bound on script calls per pipelined round trip; bigger requests are sent in chunks. */
export const maxKeysPerBatch = 500;

export const regionScriptsDir = fileURLToPath(new URL("./scripts/region-quota/", import.meta.url));
/** The region scripts share the limiter scripts' includes (the server's TIME). */
const regionIncludesDir = fileURLToPath(new URL("./scripts/includes/", import.meta.url));

/**
 * The Redis key of a quota: one hash per (policy, subject). One key per script call,
 * so cluster slots never split a call (RL-08); the hash tag keeps it explicit.
 *
 * @example
 * regionQuotaKey({ policy: "plan", subject: "key:42" }); // "rq:{plan:key:42}"
 */
export function regionQuotaKey(key: QuotaKey): string {
  return `rq:{${key.policy}:${key.subject}}`;
}

const num = (value: unknown): number => Number(value);

function toSpend(reply: unknown): RegionalSpend {
  const [allowed, nowMs, shareUnits, remaining, retryAfterMs, epoch] = (reply as unknown[]).map(num);
  return {
    allowed: allowed === 1,
    nowMs: nowMs!,
    shareUnits: shareUnits!,
    remaining: remaining!,
    retryAfterMs: retryAfterMs!,
    epoch: epoch!,
  };
}

function toClose(reply: unknown): RegionalClose {
  const [epoch, nowMs, used, demand, windowMs, share, nextEpoch] = (reply as unknown[]).map(num);
  return {
    epoch: epoch!,
    nextEpoch: nextEpoch!,
    nowMs: nowMs!,
    used: used!,
    demand: demand!,
    windowMs: windowMs!,
    shareUnits: share! < 0 ? undefined : share!,
  };
}

function toState(reply: unknown): RegionalState | undefined {
  const [exists, share, epoch, windowStartMs, admitted, refused] = (reply as unknown[]).map(num);
  if (exists !== 1) return undefined;
  return {
    shareUnits: share! < 0 ? undefined : share!,
    epoch: epoch!,
    windowStartMs: windowStartMs!,
    admitted: admitted!,
    refused: refused!,
  };
}

/** Runs `calls` in chunks of maxKeysPerBatch (one round trip each), results in call order. */
async function runChunked<T>(
  runner: ScriptRunner,
  calls: readonly { name: string; keys: string[]; args: (string | number)[] }[],
  convert: (reply: unknown) => T,
): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = [];
  for (let at = 0; at < calls.length; at += maxKeysPerBatch) {
    const settled = await runner.runBatch(calls.slice(at, at + maxKeysPerBatch));
    for (const result of settled) {
      if (result.status === "rejected") {
        results.push(result);
        continue;
      }
      try {
        results.push({ status: "fulfilled", value: convert(result.value) });
      } catch (reason) {
        results.push({ status: "rejected", reason });
      }
    }
  }
  return results;
}

/** A RegionQuotaStore over any ScriptRunner: identical code on both engines. */
export class ScriptRegionQuotaStore implements RegionQuotaStore {
  readonly region: string;
  readonly engine: "redis" | "in-process";
  readonly #runner: ScriptRunner;
  readonly #ping: () => Promise<void>;
  readonly #close: () => Promise<void>;

  constructor(options: {
    region: string;
    engine: "redis" | "in-process";
    runner: ScriptRunner;
    ping: () => Promise<void>;
    close: () => Promise<void>;
  }) {
    this.region = options.region;
    this.engine = options.engine;
    this.#runner = options.runner;
    this.#ping = options.ping;
    this.#close = options.close;
  }

  async spend(key: QuotaKey, cost: number, limit: RegionalLimit): Promise<RegionalSpend> {
    const args = [cost, limit.staticShare, limit.intervalMs, limit.maxWindowMs];
    return toSpend(await this.#runner.run("region-spend", [regionQuotaKey(key)], args));
  }

  closeWindows(keys: readonly QuotaKey[]): Promise<PromiseSettledResult<RegionalClose>[]> {
    const calls = keys.map((key) => ({ name: "region-close", keys: [regionQuotaKey(key)], args: [] }));
    return runChunked(this.#runner, calls, toClose);
  }

  publishShares(updates: readonly ShareUpdate[]): Promise<PromiseSettledResult<PublishOutcome>[]> {
    const calls = updates.map((u) => ({
      name: "region-publish",
      keys: [regionQuotaKey(u.key)],
      args: [u.epoch, u.shareUnits],
    }));
    return runChunked(this.#runner, calls, (reply) => {
      const [applied, epoch] = (reply as unknown[]).map(num);
      return { applied: applied === 1, epoch: epoch! };
    });
  }

  readStates(keys: readonly QuotaKey[]): Promise<PromiseSettledResult<RegionalState | undefined>[]> {
    const calls = keys.map((key) => ({ name: "region-read", keys: [regionQuotaKey(key)], args: [] }));
    return runChunked(this.#runner, calls, toState);
  }

  ping(): Promise<void> {
    return this.#ping();
  }

  close(): Promise<void> {
    return this.#close();
  }
}

export interface RedisRegionQuotaStoreOptions extends RedisConnectOptions {
  /** The region this Redis belongs to (for reports and logs). */
  region: string;
  url: string;
}

/**
 * Connects to ONE region's Redis and loads the scripts. A region's service opens only
 * its own; the rebalancer opens one per region.
 *
 * @example
 * const store = await openRedisRegionQuotaStore({ region: "us-east", url, commandTimeoutMs: 250 });
 */
export async function openRedisRegionQuotaStore(
  options: RedisRegionQuotaStoreOptions,
): Promise<RegionQuotaStore> {
  const registry = await ScriptRegistry.fromDir(regionScriptsDir, {
    maxBatch: maxKeysPerBatch,
    includesDir: regionIncludesDir,
  });
  const redis = await connectRedis({
    autoPipelining: true,
    connectionName: `rq-${options.region}`,
    ...options,
  });
  try {
    await registry.loadAll(redis);
  } catch (error) {
    await closeRedis(redis);
    throw error;
  }
  return new ScriptRegionQuotaStore({
    region: options.region,
    engine: "redis",
    runner: new RedisScriptRunner(redis, registry),
    ping: async () => {
      await redis.ping();
    },
    close: () => closeRedis(redis),
  });
}

/**
 * The embedded engine: the scripts' twins on an in-process keyspace with `clock`.
 *
 * @example
 * const store = await openInProcessRegionQuotaStore({ region: "a", clock: new ManualClock(0) });
 */
export async function openInProcessRegionQuotaStore(options: {
  region: string;
  clock: Clock;
  maxKeys?: number;
}): Promise<RegionQuotaStore> {
  const registry = await ScriptRegistry.fromDir(regionScriptsDir, {
    maxBatch: maxKeysPerBatch,
    includesDir: regionIncludesDir,
  });
  const keyspace = new InProcessKeyspace({ clock: options.clock, maxKeys: options.maxKeys ?? 1_000_000 });
  return new ScriptRegionQuotaStore({
    region: options.region,
    engine: "in-process",
    runner: new InProcessScriptRunner({ registry, twins: regionQuotaTwins, keyspace }),
    ping: async () => {},
    close: async () => {},
  });
}

// ---------------------------------------------------------------- twins

function nowOf(keyspace: InProcessKeyspace): number {
  const [seconds, micros] = keyspace.time();
  return seconds * 1000 + Math.floor(micros / 1000);
}

function readState(keyspace: InProcessKeyspace, key: string): RegionalState | undefined {
  return regionalFromStored(keyspace.hgetall(key));
}

/** Runs `body`, turning a domain RangeError into the script's `ERR usage` reply. */
function guarded(body: () => LuaReply): LuaReply {
  try {
    return body();
  } catch (error) {
    return { err: `ERR usage: ${(error as Error).message}` };
  }
}

const spendTwin: ScriptTwin = (keyspace, keys, argv) =>
  guarded(() => {
    const [cost, staticShare, intervalMs, maxWindowMs] = argv.map(Number);
    const key = keys[0]!;
    const limit = { staticShare: staticShare!, intervalMs: intervalMs!, maxWindowMs: maxWindowMs! };
    const nowMs = nowOf(keyspace);
    const d = decideRegional(readState(keyspace, key), nowMs, limit, cost!);
    keyspace.hset(key, regionalToStored(d.state));
    if (d.ttlMs > 0) keyspace.pexpire(key, d.ttlMs);
    return [d.allowed ? 1 : 0, nowMs, d.shareUnits, d.remaining, d.retryAfterMs, d.state.epoch];
  });

const closeTwin: ScriptTwin = (keyspace, keys) => {
  const key = keys[0]!;
  const nowMs = nowOf(keyspace);
  const { state, closed } = closeRegionalWindow(readState(keyspace, key), nowMs);
  keyspace.hset(key, regionalToStored(state));
  keyspace.persist(key);
  const share = closed.shareUnits ?? -1;
  return [closed.epoch, nowMs, closed.used, closed.demand, closed.windowMs, share, closed.nextEpoch];
};

const publishTwin: ScriptTwin = (keyspace, keys, argv) =>
  guarded(() => {
    const key = keys[0]!;
    const before = readState(keyspace, key);
    const { state, applied } = publishRegionalShare(before, Number(argv[0]), Number(argv[1]));
    if (applied && state) keyspace.hset(key, regionalToStored(state));
    return [applied ? 1 : 0, before?.epoch ?? -1];
  });

const readTwin: ScriptTwin = (keyspace, keys) => {
  const state = readState(keyspace, keys[0]!);
  if (state === undefined) return [0, -1, 0, 0, 0, 0];
  return [1, state.shareUnits ?? -1, state.epoch, state.windowStartMs, state.admitted, state.refused];
};

/** The twins of src/store/scripts/region-quota/*.lua, by script name. */
export const regionQuotaTwins: Readonly<Record<string, ScriptTwin>> = {
  "region-spend": spendTwin,
  "region-close": closeTwin,
  "region-publish": publishTwin,
  "region-read": readTwin,
};
