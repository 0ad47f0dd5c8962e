/**
 * Test helpers for the cluster: a local cluster of node processes (each in its own
 * process group, reaped with this test process, its data dir removed), an ioredis
 * Cluster client with every option spelled out, an admin connection per node, the
 * reshard tool wired to them, and a bounded wait for conditions on other processes.
 *
 * @example
 * const harness = await startTestCluster({ nodes: 6, replicas: 1 });
 * const redis = harness.ioredis();
 * await harness.stop();
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@casebook/kit/clock";
import { keySlot } from "@casebook/kit/cluster-slot";
import { seededRandom } from "@casebook/kit/random";
import { guardProcessTree, trackTempDir } from "@casebook/lab/child-reaper";
import { Cluster, type ClusterOptions } from "ioredis";
import type { CacheServer } from "../src/api/cache-server.ts";
import { startRespApi } from "../src/api/register-api.ts";
import { AdminClient } from "../src/cluster/clients/cluster-admin-client.ts";
import { clusterKeyspaceObserver } from "../src/cluster/workers/cluster-keyspace-observer.ts";
import {
  type LaunchedNode,
  type LaunchOptions,
  type LocalCluster,
  launchCluster,
  waitUntil,
} from "../src/cluster/workers/cluster-launcher.ts";
import { moveSlots, type ReshardNode } from "../src/cluster/workers/cluster-reshard.ts";
import { ClusterRuntime } from "../src/cluster/workers/cluster-runtime.ts";
import { Keyspace } from "../src/domain/keyspace.ts";

export { waitUntil };

export interface TestCluster {
  readonly cluster: LocalCluster;
  readonly dir: string;
  ioredis(options?: ClusterOptions): Cluster;
  admin(index: number): Promise<AdminClient>;
  /** The launched node (by launcher index) that owns `slot` in node `viewer`'s view. */
  ownerOf(slot: number, viewer?: number): Promise<LaunchedNode>;
  /** Waits until every running node's CLUSTER SLOTS names node `ownerIndex` for `slot` (gossip has converged). */
  converged(slot: number, ownerIndex: number): Promise<void>;
  /** Moves `slots` from node `from` to node `to` with the reshard tool. */
  move(from: number, to: number, slots: readonly number[]): Promise<{ slots: number; keys: number }>;
  stop(): Promise<void>;
}

/**
 * Failure-detection timeout for a cluster whose test never fails a node over: far above any
 * event-loop stall seen on a loaded CI host, so a stalled node is not voted down mid-test
 * (CLUSTERDOWN seen at load ~8 with 1 s). Failover tests pass their own, short timeout.
 */
export const NO_FAILOVER_NODE_TIMEOUT_MS = 10_000;

export async function startTestCluster(
  options: Partial<LaunchOptions> & Pick<LaunchOptions, "nodes" | "replicas">,
): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), "cache-cluster-"));
  const untrack = trackTempDir(dir);
  const cluster = await launchCluster({
    dataDir: dir,
    nodeTimeoutMs: 1_000,
    logLevel: "info",
    startTimeoutMs: 20_000,
    ...options,
    detached: true,
    onSpawn: (child) => {
      const guard = guardProcessTree(child.pid!);
      child.once("exit", () => guard.release());
    },
  });
  const admins: AdminClient[] = [];
  const admin = async (index: number) => {
    const client = await cluster.admin(index);
    admins.push(client);
    return client;
  };
  const clients: Cluster[] = [];
  return {
    cluster,
    dir,
    admin,
    ioredis(extra: ClusterOptions = {}) {
      const first = cluster.nodes[0]!;
      const client = new Cluster([{ host: first.host, port: first.port }], {
        scaleReads: "master",
        // While slots move, the old and the new owner can briefly disagree and bounce a command
        // between them; a short pause per MOVED lets the views converge within the bound
        // instead of spending 32 redirections in a millisecond (seen in CI under load).
        maxRedirections: 32,
        retryDelayOnMoved: 10,
        retryDelayOnTryAgain: 20,
        retryDelayOnClusterDown: 100,
        retryDelayOnFailover: 100,
        slotsRefreshTimeout: 2_000,
        enableOfflineQueue: true,
        redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: 3, commandTimeout: 5_000 },
        ...extra,
      });
      client.on("error", () => {});
      clients.push(client);
      return client;
    },
    async ownerOf(slot: number, viewer = 0) {
      const client = await admin(viewer);
      const slots = (await client.call("CLUSTER", "SLOTS")) as Array<
        [number, number, [string, number, string]]
      >;
      const range = slots.find(([first, last]) => slot >= first && slot <= last);
      const node = cluster.nodes.find((candidate) => candidate.id === range?.[2][2]);
      if (node === undefined) throw new Error(`no owner for slot ${slot}`);
      return node;
    },
    async converged(slot: number, ownerIndex: number) {
      const owner = cluster.nodes[ownerIndex]!;
      const running = cluster.nodes.filter(
        (node) => node.child.exitCode === null && node.child.signalCode === null,
      );
      const views = await Promise.all(running.map((node) => admin(node.index)));
      await waitUntil(`every node to see slot ${slot} on node ${ownerIndex}`, 10_000, async () => {
        for (const view of views) {
          const slots = (await view.call("CLUSTER", "SLOTS")) as Array<
            [number, number, [string, number, string]]
          >;
          const range = slots.find(([first, last]) => slot >= first && slot <= last);
          if (range?.[2][2] !== owner.id) return false;
        }
        return true;
      });
    },
    async move(from: number, to: number, slots: readonly number[]) {
      const primaries: ReshardNode[] = [];
      for (const node of cluster.nodes) {
        const role = (await (await admin(node.index)).call("ROLE")) as string[];
        if (role[0] === "master")
          primaries.push({ id: node.id, host: node.host, port: node.port, admin: await admin(node.index) });
      }
      const source = primaries.find((node) => node.id === cluster.nodes[from]!.id)!;
      const target = primaries.find((node) => node.id === cluster.nodes[to]!.id)!;
      return moveSlots({ source, target, primaries, slots });
    },
    async stop() {
      for (const client of clients) client.disconnect();
      for (const client of admins) client.close();
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
      untrack();
    },
  };
}

/** `count` distinct keys `prefix:<n>` whose slots fall in [first, last]. */
export function keysInSlots(prefix: string, count: number, first: number, last: number): string[] {
  const keys: string[] = [];
  for (let n = 0; keys.length < count && n < count * 100_000; n++) {
    const key = `${prefix}:${n}`;
    const slot = keySlot(key);
    if (slot >= first && slot <= last) keys.push(key);
  }
  return keys;
}

export interface InProcessNode {
  readonly runtime: ClusterRuntime;
  readonly server: CacheServer;
  readonly keyspace: Keyspace;
  readonly port: number;
  readonly dir: string;
  close(): Promise<void>;
}

const quietLog = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * A cluster node in this process (no MIGRATE: a node cannot wait for a target in its own
 * thread). `dir` keeps nodes.json; pass the same dir again to restart the node.
 */
export async function startInProcessNode(
  options: { dir?: string; nodeTimeoutMs?: number; maxmemoryBytes?: number; port?: number } = {},
): Promise<InProcessNode> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "cache-node-"));
  let runtime: ClusterRuntime | undefined;
  const keyspace = new Keyspace({
    clock: systemClock,
    random: seededRandom("in-process-node"),
    maxmemoryBytes: options.maxmemoryBytes ?? 0,
    policy: "allkeys-lru",
    observer: clusterKeyspaceObserver(() => runtime?.source),
  });
  runtime = new ClusterRuntime({
    keyspace,
    clock: systemClock,
    random: seededRandom("in-process-cluster"),
    settings: {
      busHost: "127.0.0.1",
      busPort: 0,
      announceHost: "127.0.0.1",
      nodeTimeoutMs: options.nodeTimeoutMs ?? 1_000,
      requireFullCoverage: true,
      minReplicasToWrite: 0,
      minReplicasMaxLagMs: 10_000,
      backlogBytes: 1024 * 1024,
      replicaOutputLimitBytes: 64 * 1024 * 1024,
    },
    log: quietLog,
  });
  const { server, port } = await startRespApi({
    keyspace,
    clock: systemClock,
    port: options.port ?? 0,
    cluster: runtime,
  });
  await runtime.start({ port, dir });
  const started = runtime;
  return {
    runtime: started,
    server,
    keyspace,
    port,
    dir,
    close: async () => {
      await server.close();
      await started.close();
    },
  };
}

/** An admin connection to an in-process node. */
export function adminOf(node: { port: number }): Promise<AdminClient> {
  return AdminClient.connect("127.0.0.1", node.port, { timeoutMs: 5_000 });
}

/** Two in-process nodes serving half the slots each (0–8191 on `a`), with an admin link to each. */
export interface TwoNodeCluster {
  readonly a: InProcessNode;
  readonly b: InProcessNode;
  readonly adminA: AdminClient;
  readonly adminB: AdminClient;
  close(): Promise<void>;
}

/**
 * Two in-process nodes with their halves of the slots, B's CLUSTER MEET to A just sent: the
 * meeting is still under way (neither may serve yet). `startTwoNodeCluster` waits it out.
 */
export async function meetTwoNodes(nodeTimeoutMs: number): Promise<TwoNodeCluster> {
  const a = await startInProcessNode({ nodeTimeoutMs });
  const b = await startInProcessNode({ nodeTimeoutMs });
  const adminA = await adminOf(a);
  const adminB = await adminOf(b);
  await adminA.call("CLUSTER", "SET-CONFIG-EPOCH", 1);
  await adminB.call("CLUSTER", "SET-CONFIG-EPOCH", 2);
  await adminA.call("CLUSTER", "ADDSLOTSRANGE", 0, 8191);
  await adminB.call("CLUSTER", "ADDSLOTSRANGE", 8192, 16383);
  await adminB.call("CLUSTER", "MEET", "127.0.0.1", a.port, a.runtime.busPort);
  return {
    a,
    b,
    adminA,
    adminB,
    close: async () => {
      adminA.close();
      adminB.close();
      await a.close();
      await b.close();
      for (const node of [a, b]) rmSync(node.dir, { recursive: true, force: true });
    },
  };
}

/**
 * Both nodes share the test's event loop: `nodeTimeoutMs` should be generous (10 s), so a stall
 * on a loaded machine cannot let the majority lease lapse into -CLUSTERDOWN. Failure detection
 * is tested with node processes elsewhere; these clusters are for slots and redirects.
 */
export async function startTwoNodeCluster(nodeTimeoutMs: number): Promise<TwoNodeCluster> {
  const pair = await meetTwoNodes(nodeTimeoutMs);
  const serving = async (admin: AdminClient) =>
    ((await admin.call("CLUSTER", "INFO")) as string).includes("cluster_state:ok");
  await waitUntil(
    "both nodes to serve",
    10_000,
    async () => (await serving(pair.adminA)) && (await serving(pair.adminB)),
  );
  return pair;
}
