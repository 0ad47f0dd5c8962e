/**
 * The Redis the bench runs against: $REDIS_URL when set, else a throw-away
 * redis-server spawned for the run (so `casebook bench rate-limiter` works on a
 * bare machine). Every contender writes under one unique key prefix, deleted at
 * the end: a shared Redis is never flushed.
 *
 * A private (spawned) Redis also allows measurements a shared one would falsify:
 * server CPU per command (INFO commandstats) and memory growth per key (used_memory).
 *
 * @example
 * const target = await openRedisTarget({ log: (line) => process.stderr.write(line) });
 * try { ... target.url, target.keyPrefix ... } finally { await target.close(); }
 */
import { closeRedis, connectRedis, redactRedisUrl } from "@casebook/infra/redis/connect-redis";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { uniqueName } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";

export interface RedisTarget {
  readonly url: string;
  /** What ran, for the report: "private redis-server 7.0.15 (spawned) at redis://127.0.0.1:41234/". */
  readonly label: string;
  readonly redisVersion: string;
  /** True when the bench spawned this Redis: nobody else's commands or keys are in it. */
  readonly isPrivate: boolean;
  /** Ends with ":"; every key of the run starts with it. */
  readonly keyPrefix: string;
  /** An unprefixed client for INFO, MEMORY USAGE, SCRIPT LOAD and cleanup. */
  readonly admin: Redis;
  /** Deletes the run's keys, closes the admin client, stops a spawned Redis. Idempotent. */
  close(): Promise<void>;
}

/** Bound on an admin command (DEL of one SCAN page, INFO): generous, these are not measured. */
const adminCommandTimeoutMs = 5_000;
/** Keys per SCAN page and per DEL. */
const scanPageKeys = 1_000;
/** Bound on SCAN rounds while deleting: far above what any run creates (rounds ≈ keys in Redis / page). */
const maxScanRounds = 1_000_000;

/**
 * Deletes every key starting with `prefix` (never FLUSHDB: the Redis may be shared).
 *
 * @example
 * await deleteKeysWithPrefix(admin, "bench-rl_1_x_1:"); // 20000
 */
export async function deleteKeysWithPrefix(admin: Redis, prefix: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  for (let round = 0; round < maxScanRounds; round++) {
    const [next, keys] = await admin.scan(cursor, "MATCH", `${prefix}*`, "COUNT", scanPageKeys);
    if (keys.length > 0) deleted += await admin.del(...keys);
    cursor = next;
    if (cursor === "0") return deleted;
  }
  throw new Error(`deleting keys under ${prefix}: SCAN did not finish within ${maxScanRounds} rounds`);
}

async function serverVersion(admin: Redis): Promise<string> {
  const info = await admin.info("server");
  return /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
}

/**
 * Connects to $REDIS_URL, or spawns a private redis-server when it is unset.
 *
 * @example
 * const target = await openRedisTarget({ env: process.env, log: console.error });
 */
export async function openRedisTarget(options: {
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<RedisTarget> {
  const given = options.env.REDIS_URL;
  let spawned: SpawnedRedis | undefined;
  if (given === undefined || given === "") {
    options.log("REDIS_URL is not set: spawning a throw-away redis-server for this run");
    spawned = await spawnRedis();
  }
  const url = spawned?.url ?? given!;
  let admin: Redis;
  try {
    admin = await connectRedis({
      url,
      commandTimeoutMs: adminCommandTimeoutMs,
      connectionName: "bench-admin",
    });
  } catch (error) {
    await spawned?.stop();
    throw error;
  }
  const redisVersion = await serverVersion(admin);
  const keyPrefix = `${uniqueName("bench-rl")}:`;
  const where = spawned ? "private redis-server (spawned for this run)" : "REDIS_URL";
  let closed = false;
  return {
    url,
    label: `${where}, Redis ${redisVersion} at ${redactRedisUrl(url)}`,
    redisVersion,
    isPrivate: spawned !== undefined,
    keyPrefix,
    admin,
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        // A spawned Redis is stopped anyway; deleting first would only cost time.
        if (!spawned) options.log(`deleted ${await deleteKeysWithPrefix(admin, keyPrefix)} bench keys`);
      } finally {
        await closeRedis(admin);
        await spawned?.stop();
      }
    },
  };
}
