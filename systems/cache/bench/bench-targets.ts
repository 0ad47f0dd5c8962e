/**
 * The two servers the bench compares, started for the run and stopped after it: this
 * cache node as its own process (`node src/main.ts` with its manifest's env, as `casebook up`
 * runs it, so its RSS is its own and its V8 young generation bounded the same way), and a
 * private redis-server (lab's spawner: no persistence, own port).
 * Both get the same maxmemory and policy, large enough that the bench never evicts.
 *
 * @example
 * const targets = await openBenchTargets(log);
 * targets.ours.port; targets.redis.port;
 * await targets.close();
 */
import { findExecutable } from "@casebook/lab/executables";
import { freePort } from "@casebook/lab/free-port";
import { spawnChild } from "@casebook/lab/spawn-child";
import { redisProbe, type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { Redis } from "ioredis";
import manifest from "../package.json" with { type: "json" };
import { cacheErrors } from "../src/errors.ts";

/** Same limit and policy on both sides: 1 GiB holds the default keyspace many times over. */
export const BENCH_MAXMEMORY = "1gb";
export const BENCH_POLICY = "allkeys-lru";
/** Bound on the node's start (Node compiles the TypeScript on the way up). */
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const PROBE_TIMEOUT_MS = 1_000;

export interface BenchServer {
  readonly name: string;
  readonly port: number;
  /** INFO memory fields and DBSIZE, read through a short-lived connection. */
  memory(): Promise<{ rssBytes: number; usedBytes: number; keys: number }>;
  /**
   * SETs every key redis-benchmark's `-r keyspace` can name (`key:000000000042`), so both
   * servers hold the same keys when memory is compared: the timed runs touch a random subset.
   */
  fill(keyspace: number, dataBytes: number): Promise<void>;
}

export interface BenchTargets {
  readonly ours: BenchServer;
  readonly redis: BenchServer;
  /** Node's socket floor (bench/net-floor-server.ts): PING traffic only. */
  readonly floor: { readonly name: string; readonly port: number };
  readonly benchmark: string;
  close(): Promise<void>;
}

async function readMemory(port: number): Promise<{ rssBytes: number; usedBytes: number; keys: number }> {
  const { field, keys } = await readInfoMemory(port);
  return { rssBytes: field("used_memory_rss"), usedBytes: field("used_memory"), keys };
}

/** Keys per pipeline when filling: bounds the client's buffered replies. */
const FILL_CHUNK = 1_000;

async function fillKeys(port: number, keyspace: number, dataBytes: number): Promise<void> {
  const client = new Redis({
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 30_000,
    protocol: 2,
  });
  const value = "x".repeat(dataBytes);
  try {
    await client.connect();
    for (let start = 0; start < keyspace; start += FILL_CHUNK) {
      const pipeline = client.pipeline();
      for (let i = start; i < Math.min(keyspace, start + FILL_CHUNK); i++)
        pipeline.set(`key:${String(i).padStart(12, "0")}`, value);
      await pipeline.exec();
    }
  } finally {
    client.disconnect();
  }
}

async function waitForPong(port: number, child: { readonly exitCode: number | null }): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while ((await redisProbe(port, ["PING"], PROBE_TIMEOUT_MS)) !== "+PONG") {
    if (child.exitCode !== null)
      throw new Error(`the cache node exited with code ${child.exitCode} while starting`);
    if (Date.now() > deadline)
      throw new Error(`the cache node did not answer PING within ${START_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `script` with Node as a child process listening on a free port; resolves once it answers PING. */
async function startNodeChild(script: string, env: NodeJS.ProcessEnv, args: (port: number) => string[]) {
  const port = await freePort();
  // Ready is its PING answer; its stdout is not read (no line kept), its stderr is echoed.
  const child = await spawnChild(new URL(script, import.meta.url), {
    args: args(port),
    env: { ...process.env, ...env, CACHE_PORT: String(port) },
    ready: false,
    queueLines: false,
    stopTimeoutMs: STOP_TIMEOUT_MS,
  });
  child.process.stdin.end(); // no input, as stdin "ignore" gave
  try {
    await waitForPong(port, child.process);
  } catch (error) {
    await child.kill();
    throw error;
  }
  // SIGTERM, SIGKILL after STOP_TIMEOUT_MS.
  const stop = () => child.stop();
  return { port, stop };
}

/** This node as its own process (`node src/main.ts`) on a free port; `stop()` ends it. */
export function startOurNode(maxmemory: string = BENCH_MAXMEMORY) {
  const env = {
    ...manifest.casebook.env,
    PORT: "0",
    CACHE_MAXMEMORY: maxmemory,
    CACHE_MAXMEMORY_POLICY: BENCH_POLICY,
    LOG_LEVEL: "warn",
  };
  return startNodeChild("../src/main.ts", env, () => []);
}

function startFloor() {
  return startNodeChild("./net-floor-server.ts", {}, (port) => [String(port)]);
}

/** Fields of INFO memory as numbers (NaN when absent: redis-server has no `node_*` fields). */
export type InfoMemory = (field: string) => number;

/** INFO memory and DBSIZE of a server, through a short-lived connection. */
export async function readInfoMemory(port: number): Promise<{ field: InfoMemory; keys: number }> {
  const client = new Redis({
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 10_000,
    protocol: 2,
  });
  try {
    await client.connect();
    const info = await client.info("memory");
    const field = (name: string) =>
      Number(new RegExp(`(?:^|\\r\\n)${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
    return { field, keys: await client.dbsize() };
  } finally {
    client.disconnect();
  }
}

export interface MemoryPair {
  readonly ours: number;
  readonly redis: number;
  close(): Promise<void>;
}

/**
 * A fresh node and a fresh redis-server for one cell of the memory matrix, both without a
 * maxmemory (nothing evicts, and our node's heap check does not apply), so each cell's idle
 * RSS and growth are its own.
 */
export async function openMemoryPair(): Promise<MemoryPair> {
  const redis = await spawnRedis({ args: ["--maxmemory", "0", "--maxmemory-policy", BENCH_POLICY] });
  let ours: Awaited<ReturnType<typeof startOurNode>>;
  try {
    ours = await startOurNode("0");
  } catch (error) {
    await redis.stop();
    throw error;
  }
  return {
    ours: ours.port,
    redis: Number(new URL(redis.url).port),
    close: async () => {
      await Promise.allSettled([ours.stop(), redis.stop()]);
    },
  };
}

export async function openBenchTargets(log: (line: string) => void): Promise<BenchTargets> {
  const benchmark = findExecutable("redis-benchmark");
  if (!benchmark) {
    throw cacheErrors.create("CACHE_BENCH_TOOL_FAILED", {
      detail: "redis-benchmark is not installed: apt-get install -y redis-tools",
    });
  }
  let redis: SpawnedRedis | undefined;
  let ours: Awaited<ReturnType<typeof startOurNode>> | undefined;
  let floor: Awaited<ReturnType<typeof startFloor>> | undefined;
  try {
    redis = await spawnRedis({ args: ["--maxmemory", BENCH_MAXMEMORY, "--maxmemory-policy", BENCH_POLICY] });
    ours = await startOurNode();
    floor = await startFloor();
  } catch (error) {
    await Promise.allSettled([redis?.stop(), ours?.stop()]);
    throw error;
  }
  const redisPort = Number(new URL(redis.url).port);
  log(
    `cache node on port ${ours.port}, node net floor on ${floor.port} (node ${process.version}); private redis-server on ${redisPort}`,
  );
  const spawned = { redis, ours, floor };
  return {
    ours: {
      name: "cache",
      port: ours.port,
      memory: () => readMemory(spawned.ours.port),
      fill: (keyspace, dataBytes) => fillKeys(spawned.ours.port, keyspace, dataBytes),
    },
    redis: {
      name: "redis",
      port: redisPort,
      memory: () => readMemory(redisPort),
      fill: (keyspace, dataBytes) => fillKeys(redisPort, keyspace, dataBytes),
    },
    floor: { name: "node net floor", port: floor.port },
    benchmark,
    close: async () => {
      await Promise.allSettled([spawned.ours.stop(), spawned.floor.stop(), spawned.redis.stop()]);
    },
  };
}
