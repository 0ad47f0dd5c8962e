/**
 * A throw-away Redis Cluster for tests that must prove what only a cluster checks:
 * a multi-key command refused with CROSSSLOT, keys of one hash tag on one node, a
 * script reaching a key that lives on another node refused, and (with replicas) failover.
 *
 * Each node is a `spawnRedis` engine in cluster mode (its own port and bus port, its
 * own temp dir with its nodes.conf, no persistence, reaped with the test process), so
 * every node can be paused, killed and restarted like a single Redis; a restarted node
 * reads its nodes.conf back and rejoins as the same node id. The cluster is formed
 * here, by the steps `redis-cli --cluster create` takes (distinct config epochs,
 * ADDSLOTSRANGE, MEET, REPLICATE) without its one-second sleeps, and is handed back
 * only once EVERY node reports `cluster_state:ok` with all slots served and the whole
 * topology known. Needs Redis 7.0+ (ADDSLOTSRANGE, `--cluster-port`).
 *
 * @example
 * const cluster = await spawnRedisCluster({ primaries: 3 });
 * const client = new Cluster([...cluster.startupNodes], { lazyConnect: true });
 * await client.connect();
 * await client.set("{user42}:a", "1");
 * await cluster.primaryForSlot(await cluster.slotOf("{user42}:a")).engine.kill(); // take its node away
 * await cluster.stop(); // every node gone, every temp dir removed
 */
import { Redis } from "ioredis";
import type { EngineTimeouts } from "./engine-process.ts";
import { freePort } from "./free-port.ts";
import { labErrors } from "./lab-errors.ts";
import { type SpawnedRedis, spawnRedis } from "./spawn-redis.ts";

export interface SpawnRedisClusterOptions extends EngineTimeouts {
  /** Primaries sharing the 16 384 slots in equal ranges. Default 3 (the smallest cluster redis-cli builds). */
  primaries?: number;
  /** Replicas of each primary. Default 0; 1 gives the usual 3 + 3. */
  replicasPerPrimary?: number;
  /** `cluster-node-timeout`: how long a silent node is PFAIL before a failover starts. Default 2 000 ms. */
  nodeTimeoutMs?: number;
  /** Extra `redis-server` arguments for every node. */
  args?: string[];
  /** Install Debian's redis-server when it is missing (root only). Default true. */
  install?: boolean;
  /** Timeout of one admin command (PING, CLUSTER INFO, …) to a node. Default 1 000 ms. */
  probeTimeoutMs?: number;
}

/** An inclusive slot range `[first, last]`. */
export type SlotRange = readonly [first: number, last: number];

export interface RedisClusterNode {
  /** The node id (CLUSTER MYID); it survives `engine.restart()` through nodes.conf. */
  readonly id: string;
  readonly role: "primary" | "replica";
  readonly port: number;
  /** The cluster bus port (gossip, failover votes). */
  readonly busPort: number;
  /** `redis://127.0.0.1:<port>`: a plain connection to this one node. */
  readonly url: string;
  /** The slots this node was given at creation (empty for a replica); failovers move them. */
  readonly slotRanges: readonly SlotRange[];
  /** The primary this replica follows at creation; undefined for a primary. */
  readonly primaryId: string | undefined;
  /** The process: pause, resume, kill, restart, log. */
  readonly engine: SpawnedRedis;
}

export interface SpawnedRedisCluster {
  /** Primaries first (in slot order), then replicas. */
  readonly nodes: readonly RedisClusterNode[];
  readonly primaries: readonly RedisClusterNode[];
  readonly replicas: readonly RedisClusterNode[];
  /** Seed nodes for a cluster client: `new Cluster(cluster.startupNodes)`. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** The node that served `slot` at creation. */
  primaryForSlot(slot: number): RedisClusterNode;
  /** The slot of `key`, as the cluster computes it (asked of a node: CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** Waits until every running node reports cluster_state:ok (after a kill, a failover, a restart). */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Final: every node stopped, every temp dir removed. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export const SLOT_COUNT = 16_384;
/** Bounds on the topology: a test cluster larger than this is a benchmark, not a test. */
export const MAX_PRIMARIES = 16;
export const MAX_REPLICAS_PER_PRIMARY = 2;

const HOST = "127.0.0.1";
const DEFAULTS = { nodeTimeoutMs: 2_000, probeTimeoutMs: 1_000, readyTimeoutMs: 20_000, pollMs: 25 };

/** Splits the slots into `count` contiguous ranges of (nearly) equal size. */
export function slotRanges(count: number): SlotRange[] {
  return Array.from({ length: count }, (_, i) => [
    Math.floor((i * SLOT_COUNT) / count),
    Math.floor(((i + 1) * SLOT_COUNT) / count) - 1,
  ]);
}

/** `count` distinct free ports, for bus ports: a retry after a port race must not reuse a taken one. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  for (let attempt = 0; attempt < count * 4 && ports.size < count; attempt++) ports.add(await freePort(HOST));
  return [...ports];
}

/** One cluster-mode redis-server; its bus port is fixed per main port, so restart() keeps both. */
async function spawnClusterNode(
  options: SpawnRedisClusterOptions,
): Promise<{ engine: SpawnedRedis; busPort: number }> {
  const busPorts = await distinctFreePorts(options.maxPortAttempts ?? 5);
  const busPortByPort = new Map<number, number>();
  // A start that loses a port race (main or bus port taken) is retried with a fresh main
  // port; that retry gets the next bus port from the pool, a restart the same one.
  const busPortOf = (port: number) => {
    let bus = busPortByPort.get(port);
    if (bus === undefined) {
      bus = busPorts[busPortByPort.size % busPorts.length]!;
      busPortByPort.set(port, bus);
    }
    return bus;
  };
  const engine = await spawnRedis({
    readyTimeoutMs: options.readyTimeoutMs,
    stopTimeoutMs: options.stopTimeoutMs,
    pollMs: options.pollMs,
    maxPortAttempts: options.maxPortAttempts,
    maxLogBytes: options.maxLogBytes,
    install: options.install,
    probeTimeoutMs: options.probeTimeoutMs,
    args: (port) => [
      ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
      ...["--cluster-port", String(busPortOf(port))],
      ...["--cluster-node-timeout", String(options.nodeTimeoutMs ?? DEFAULTS.nodeTimeoutMs)],
      // A node learns its own address from the peers that MEET it; a lone primary never
      // would, and would advertise "" in CLUSTER SLOTS.
      ...["--cluster-announce-ip", HOST],
      // Diskless sync waits 5 s by default for more replicas to join one transfer.
      ...["--repl-diskless-sync-delay", "0"],
      ...(options.args ?? []),
    ],
  });
  return { engine, busPort: busPortOf(engine.port) };
}

/** A short-lived admin connection: no retries, no queue, every wait bounded. */
function adminClient(port: number, timeoutMs: number): Redis {
  const client = new Redis({
    host: HOST,
    port,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true, // only until the lazy connect completes; retryStrategy ends it on failure
    retryStrategy: () => null,
    enableReadyCheck: false,
    lazyConnect: true,
  });
  client.on("error", () => {}); // failures reach the awaiting command
  return client;
}

async function withAdmin<T>(
  port: number,
  timeoutMs: number,
  body: (client: Redis) => Promise<T>,
): Promise<T> {
  const client = adminClient(port, timeoutMs);
  try {
    return await body(client);
  } finally {
    client.disconnect();
  }
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(\\S*)`, "m").exec(info)?.[1];
}

/** What one node must report before the cluster counts as formed; the reason when it does not yet. */
async function nodeConverged(
  client: Redis,
  expected: { nodes: number; primaries: number; replica: boolean },
): Promise<string | undefined> {
  const info = String(await client.call("CLUSTER", "INFO"));
  const state = infoField(info, "cluster_state");
  const slotsOk = Number(infoField(info, "cluster_slots_ok"));
  const known = Number(infoField(info, "cluster_known_nodes"));
  const size = Number(infoField(info, "cluster_size"));
  if (state !== "ok" || slotsOk !== SLOT_COUNT || known !== expected.nodes || size !== expected.primaries) {
    return `cluster_state:${state} slots_ok:${slotsOk} known_nodes:${known} size:${size}`;
  }
  // Every node must see every replica as one, or a client's slot map may miss it.
  const view = String(await client.call("CLUSTER", "NODES"));
  const replicas = view.split("\n").filter((line) => /\bslave\b/.test(line.split(" ")[2] ?? "")).length;
  if (replicas !== expected.nodes - expected.primaries) return `sees ${replicas} replicas`;
  if (!expected.replica) return undefined;
  const role = (await client.call("ROLE")) as unknown[];
  return role[0] === "slave" && role[3] === "connected" ? undefined : `replica link ${String(role[3])}`;
}

/** Polls until `check` holds on every node (each returns undefined when it does), within `timeoutMs`. */
async function untilEveryNode(
  ports: readonly number[],
  options: { timeoutMs: number; pollMs: number; probeTimeoutMs: number },
  check: (client: Redis, index: number) => Promise<string | undefined>,
): Promise<void> {
  const deadline = performance.now() + options.timeoutMs;
  let last: string[] = [];
  while (performance.now() < deadline) {
    last = await Promise.all(
      ports.map((port, index) =>
        withAdmin(port, options.probeTimeoutMs, async (client) => check(client, index)).then(
          (reason) => (reason === undefined ? "" : `${port}: ${reason}`),
          (error: Error) => `${port}: ${error.message}`,
        ),
      ),
    );
    if (last.every((reason) => reason === "")) return;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
  throw labErrors.create("LAB_ENGINE_NOT_READY", {
    detail: `redis cluster did not converge within ${options.timeoutMs} ms: ${last.filter(Boolean).join("; ")}`,
    fields: { engine: "redis-cluster", timeoutMs: options.timeoutMs, nodes: last },
  });
}

interface Started {
  engine: SpawnedRedis;
  busPort: number;
}

/** Epochs, slots, MEET, REPLICATE, then waits for convergence; returns each node's id. */
async function formCluster(
  started: readonly Started[],
  primaries: number,
  timing: { timeoutMs: number; pollMs: number; probeTimeoutMs: number },
): Promise<string[]> {
  const { probeTimeoutMs } = timing;
  const admin = <T>(index: number, body: (client: Redis) => Promise<T>) =>
    withAdmin(started[index]!.engine.port, probeTimeoutMs, body);
  const ranges = slotRanges(primaries);
  const ids = await Promise.all(
    started.map((_, i) =>
      admin(i, async (client) => {
        // Distinct epochs before MEET, as redis-cli does, so no epoch collision has to be resolved.
        await client.call("CLUSTER", "SET-CONFIG-EPOCH", String(i + 1));
        if (i < primaries) await client.call("CLUSTER", "ADDSLOTSRANGE", ...ranges[i]!.map(String));
        return String(await client.call("CLUSTER", "MYID"));
      }),
    ),
  );
  await admin(0, async (client) => {
    for (const { engine, busPort } of started.slice(1)) {
      await client.call("CLUSTER", "MEET", HOST, String(engine.port), String(busPort));
    }
  });
  const ports = started.map(({ engine }) => engine.port);
  // A replica can follow its primary only once it knows it: wait for the full membership first.
  await untilEveryNode(ports, timing, async (client) => {
    const lines = String(await client.call("CLUSTER", "NODES"))
      .trim()
      .split("\n");
    const settled = lines.filter((line) => !/handshake|noaddr/.test(line.split(" ")[2] ?? ""));
    return settled.length === started.length ? undefined : `knows ${settled.length}/${started.length} nodes`;
  });
  for (let i = primaries; i < started.length; i++) {
    await admin(i, (client) => client.call("CLUSTER", "REPLICATE", ids[i % primaries]!));
  }
  await untilEveryNode(ports, timing, (client, index) =>
    nodeConverged(client, { nodes: started.length, primaries, replica: index >= primaries }),
  );
  return ids;
}

function checkShape(primaries: number, replicasPerPrimary: number): void {
  const ok =
    Number.isInteger(primaries) &&
    primaries >= 1 &&
    primaries <= MAX_PRIMARIES &&
    Number.isInteger(replicasPerPrimary) &&
    replicasPerPrimary >= 0 &&
    replicasPerPrimary <= MAX_REPLICAS_PER_PRIMARY;
  if (ok) return;
  throw labErrors.create("LAB_CLUSTER_INVALID", {
    detail:
      `a test cluster has 1–${MAX_PRIMARIES} primaries and 0–${MAX_REPLICAS_PER_PRIMARY} replicas each; ` +
      `got ${primaries} and ${replicasPerPrimary}`,
    fields: { primaries, replicasPerPrimary },
  });
}

/**
 * Starts `primaries × (1 + replicasPerPrimary)` redis-server nodes in cluster mode and
 * forms one cluster of them; resolves once every node reports cluster_state:ok.
 */
export async function spawnRedisCluster(
  options: SpawnRedisClusterOptions = {},
): Promise<SpawnedRedisCluster> {
  const primaries = options.primaries ?? 3;
  const replicasPerPrimary = options.replicasPerPrimary ?? 0;
  checkShape(primaries, replicasPerPrimary);
  const total = primaries * (1 + replicasPerPrimary);
  const settled = await Promise.allSettled(Array.from({ length: total }, () => spawnClusterNode(options)));
  const started = settled.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const stopAll = () => Promise.all(started.map(({ engine }) => engine.stop())).then(() => {});
  const failed = settled.find((result) => result.status === "rejected");
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const timing = {
    timeoutMs: options.readyTimeoutMs ?? DEFAULTS.readyTimeoutMs,
    pollMs: options.pollMs ?? DEFAULTS.pollMs,
    probeTimeoutMs: options.probeTimeoutMs ?? DEFAULTS.probeTimeoutMs,
  };
  let ids: string[];
  try {
    ids = await formCluster(started, primaries, timing);
  } catch (error) {
    await stopAll();
    throw error;
  }
  const ranges = slotRanges(primaries);
  const nodes: RedisClusterNode[] = started.map(({ engine, busPort }, i) => ({
    id: ids[i]!,
    role: i < primaries ? "primary" : "replica",
    port: engine.port,
    busPort,
    url: engine.url,
    slotRanges: i < primaries ? [ranges[i]!] : [],
    primaryId: i < primaries ? undefined : ids[i % primaries],
    engine,
  }));
  return clusterHandle(nodes, timing, stopAll);
}

function clusterHandle(
  nodes: RedisClusterNode[],
  timing: { timeoutMs: number; pollMs: number; probeTimeoutMs: number },
  stopAll: () => Promise<void>,
): SpawnedRedisCluster {
  const primaries = nodes.filter((node) => node.role === "primary");
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= stopAll();
    return stopping;
  };
  const running = () => nodes.filter((node) => node.engine.state === "running");
  return {
    nodes,
    primaries,
    replicas: nodes.filter((node) => node.role === "replica"),
    startupNodes: nodes.map((node) => ({ host: HOST, port: node.port })),
    primaryForSlot: (slot) => {
      const node = primaries.find((p) => p.slotRanges.some(([first, last]) => slot >= first && slot <= last));
      if (!node) throw new RangeError(`slot ${slot} is outside 0..${SLOT_COUNT - 1}`);
      return node;
    },
    slotOf: async (key) => {
      const node = running()[0];
      if (!node) {
        throw labErrors.create("LAB_ENGINE_NOT_RUNNING", {
          detail: "no node of the cluster is running",
          fields: { engine: "redis-cluster" },
        });
      }
      return withAdmin(node.port, timing.probeTimeoutMs, async (c) =>
        Number(await c.call("CLUSTER", "KEYSLOT", key)),
      );
    },
    waitUntilOk: (timeoutMs = timing.timeoutMs) =>
      untilEveryNode(
        running().map((node) => node.port),
        { ...timing, timeoutMs },
        async (client) => {
          const state = infoField(String(await client.call("CLUSTER", "INFO")), "cluster_state");
          return state === "ok" ? undefined : `cluster_state:${state}`;
        },
      ),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
