/**
 * Scenario "memory" (RL-18, issue 15): what one limited key costs in Redis. Like for
 * like, ours' fixed window (an integer count under the policy's key, its window's end the key's
 * expiry) beside the peer's (rate-limiter-flexible's fixed window: an integer counter with PX);
 * ours' token bucket
 * (a string "tokensMicro:tsMs") and the design text's script (a hash of floats) on their
 * own; and what 50 million keys would need.
 *
 * Two measures: MEMORY USAGE (the key, its value and the allocator's overhead for
 * them) and, on a private Redis only, the growth of used_memory per key created,
 * which also counts the keyspace and expires hash tables MEMORY USAGE leaves out and
 * the allocator's size classes: the number a capacity plan needs. The projection uses
 * it when there. Ours' key is longer than the peer's by the policy model's namespace
 * (`<domain>:<policy>:tb:user:` against `rlflx:`); that is part of its cost.
 *
 * @example
 * const rows = await runMemoryScenario(target, { users: 10_000, log });
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import type { BenchResult } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
import type { FixedWindowLimit, TokenBucketLimit } from "../src/domain/algorithm.ts";
import { system } from "./bench-rows.ts";
import { type Contender, openOursLimiter, openPeer, openSeedFloor, peerName } from "./contenders.ts";
import { deleteKeysWithPrefix, type RedisTarget } from "./redis-target.ts";

/**
 * A slow limit for this scenario only: its keys live 200 s (ours' token bucket: 2 × full
 * refill), the fixed windows up to an hour, so none expires while being counted.
 */
const memoryLimit: TokenBucketLimit = { algorithm: "token-bucket", capacity: 100, ratePerS: 1 };
/** Bound on keys created per contender. */
const maxMemoryKeys = 100_000;
/** Keys whose MEMORY USAGE is read and averaged. */
const sampledKeys = 200;
/** Keys created, and left in place, before measuring (see measureKeyCost). */
const warmupKeys = 2_000;
/** Decisions in flight while creating keys. */
const createBatch = 200;
/** The design text's estimate: 50 million active keys. */
const projectedKeys = 50_000_000;

export interface MemoryOptions {
  readonly users: number;
  readonly log: (line: string) => void;
}

export interface KeyCost {
  readonly contender: string;
  readonly keys: number;
  readonly memoryUsageBytes: number;
  /** used_memory growth per key; undefined on a shared Redis. */
  readonly growthBytes: number | undefined;
  readonly sampleKey: string;
}

async function usedMemory(target: RedisTarget): Promise<number> {
  const info = await target.admin.info("memory");
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

async function createKeys(contender: Contender, keys: number, userPrefix = "user-"): Promise<void> {
  for (let first = 0; first < keys; first += createBatch) {
    const batch = Array.from(
      { length: Math.min(createBatch, keys - first) },
      (_, i) => `${userPrefix}${first + i}`,
    );
    await Promise.all(batch.map((user) => contender.decide(user)));
  }
}

async function averageMemoryUsage(target: RedisTarget, contender: Contender, keys: number): Promise<number> {
  const step = Math.max(1, Math.floor(keys / sampledKeys));
  let total = 0;
  let counted = 0;
  for (let i = 0; i < keys && counted < sampledKeys; i += step) {
    const bytes = await target.admin.call("MEMORY", "USAGE", contender.keyOf(`user-${i}`), "SAMPLES", "0");
    if (bytes === null)
      throw new Error(`${contender.name}: key ${contender.keyOf(`user-${i}`)} does not exist`);
    total += Number(bytes);
    counted++;
  }
  return total / counted;
}

/**
 * Creates `keys` fresh keys through the contender and measures what they cost. Deletes
 * nothing: freeing keys lets the server shrink a hash table during a later measurement,
 * which once took 26 B/key off the next contender's growth.
 */
export async function measureKeyCost(
  target: RedisTarget,
  contender: Contender,
  keys: number,
): Promise<KeyCost> {
  // A first round, left in place, takes the one-time allocations (the connection's buffers,
  // the first hash tables) out of the growth measured next.
  await createKeys(contender, warmupKeys, "warmup-");
  const before = target.isPrivate ? await usedMemory(target) : undefined;
  await createKeys(contender, keys);
  const after = target.isPrivate ? await usedMemory(target) : undefined;
  return {
    contender: contender.name,
    keys,
    memoryUsageBytes: await averageMemoryUsage(target, contender, keys),
    growthBytes: before !== undefined && after !== undefined ? (after - before) / keys : undefined,
    sampleKey: contender.keyOf("user-0"),
  };
}

/**
 * On a private Redis each contender gets its own empty database: its keyspace and
 * expires tables then grow from nothing, as they would for it alone. In one shared
 * database their size depends on who ran before, which moved the growth per key by
 * ±50 B between runs.
 */
async function inDatabase(target: RedisTarget, db: number): Promise<RedisTarget> {
  if (!target.isPrivate) return target;
  const url = new URL(target.url);
  url.pathname = `/${db}`;
  const admin = await connectRedis({
    url: url.toString(),
    commandTimeoutMs: 5_000,
    connectionName: "bench-mem",
  });
  return { ...target, url: url.toString(), admin, close: () => closeRedis(admin) };
}

type Opener = (target: RedisTarget) => Promise<Contender>;

/** Measures each contender in turn (its own database when private), then deletes every key made. */
async function keyCosts(target: RedisTarget, openers: readonly Opener[], keys: number): Promise<KeyCost[]> {
  const targets: RedisTarget[] = [];
  try {
    const costs: KeyCost[] = [];
    for (const [i, open] of openers.entries()) {
      const own = await inDatabase(target, i + 1);
      if (own !== target) targets.push(own);
      const contender = await open(own);
      try {
        costs.push(await measureKeyCost(own, contender, keys));
      } finally {
        await contender.close();
      }
    }
    return costs;
  } finally {
    for (const own of targets) {
      await deleteKeysWithPrefix(own.admin, own.keyPrefix);
      await own.close();
    }
  }
}

function costRows(
  scenario: string,
  ours: KeyCost,
  peer: KeyCost,
  seed: KeyCost,
  oursBucket: KeyCost,
): BenchResult[] {
  const memoryRow = scenarioRows({ system, scenario, peer: peerName, tidy: true });
  const row = (metric: string, unit: string, value: number, peerValue?: number) =>
    memoryRow.value(metric, unit, value, peerValue === undefined ? {} : { peer: peerValue });
  const rows = [row("bytes per key, MEMORY USAGE", "B", ours.memoryUsageBytes, peer.memoryUsageBytes)];
  if (ours.growthBytes !== undefined && peer.growthBytes !== undefined) {
    rows.push(row("bytes per key, used_memory growth", "B", ours.growthBytes, peer.growthBytes));
  }
  const perKey = (cost: KeyCost) => cost.growthBytes ?? cost.memoryUsageBytes;
  const gb = (cost: KeyCost) => (perKey(cost) * projectedKeys) / 1e9;
  rows.push(row("memory for 50 million keys", "GB", gb(ours), gb(peer)));
  rows.push(row("bytes per key, MEMORY USAGE, ours' token bucket", "B", oursBucket.memoryUsageBytes));
  if (oursBucket.growthBytes !== undefined) {
    rows.push(row("bytes per key, used_memory growth, ours' token bucket", "B", oursBucket.growthBytes));
  }
  rows.push(row("bytes per key, MEMORY USAGE, the text's script", "B", seed.memoryUsageBytes));
  return rows;
}

/**
 * Measures ours, the peer and the text's script, one after the other on fresh keys.
 *
 * @example
 * renderBench(await runMemoryScenario(target, { users: 10_000, log }), "markdown");
 */
export async function runMemoryScenario(target: RedisTarget, options: MemoryOptions): Promise<BenchResult[]> {
  const keys = Math.min(options.users, maxMemoryKeys);
  options.log(
    `memory (RL-18): ${keys} keys each, ${target.isPrivate ? "with" : "without"} used_memory growth`,
  );
  // Fixed window against fixed window: 100 per hour, so ours' clock-aligned windows (a key
  // lives until its window's end) outlive the measurement but in the rare run across an hour.
  const window: FixedWindowLimit = {
    algorithm: "fixed-window",
    limit: memoryLimit.capacity,
    windowMs: 3_600_000,
  };
  const [ours, peer, seed, oursBucket] = await keyCosts(
    target,
    [
      (t) => openOursLimiter(t, { domain: "mem", limit: window }),
      (t) => openPeer(t, window),
      (t) => openSeedFloor(t, memoryLimit),
      (t) => openOursLimiter(t, { domain: "mem", limit: memoryLimit }),
    ],
    keys,
  );
  for (const cost of [ours!, peer!, seed!, oursBucket!]) {
    options.log(`  ${cost.contender}: key ${cost.sampleKey}`);
  }
  if (!target.isPrivate)
    options.log("  used_memory growth skipped: REDIS_URL may be shared with other clients");
  return costRows(`memory (RL-18), ${keys} keys`, ours!, peer!, seed!, oursBucket!);
}
