/**
 * Starts a local cluster of our nodes (what `redis-cli --cluster create` does, plus
 * spawning): N node processes, slots split evenly over the primaries with distinct
 * config epochs, every node introduced to the first (MEET; gossip does the rest),
 * replicas attached round-robin, then a wait until every node serves (cluster_state:ok)
 * and every replica streams. A data dir that already holds a cluster is resumed as is:
 * the nodes reload their nodes.json and rejoin with their slots.
 *
 * Bounds: `startTimeoutMs` on each node's start and on the whole convergence; node
 * output kept to the last `OUTPUT_LINES` lines for error messages.
 *
 * @example
 * const cluster = await launchCluster({ nodes: 6, replicas: 1, dataDir: "/tmp/c", basePort: 7000 });
 * cluster.nodes[0];             // { id, host: "127.0.0.1", port: 7000, busPort: 17000, role: "primary", … }
 * await cluster.stop();
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { evenSlotRanges } from "../../domain/slot-ranges.ts";
import { clusterErrors } from "../../errors.ts";
import { AdminClient, type Reply } from "../clients/cluster-admin-client.ts";

export interface LaunchOptions {
  readonly nodes: number;
  /** Replicas per primary. */
  readonly replicas: number;
  readonly dataDir: string;
  readonly host?: string;
  /** Node i listens on basePort + i (bus + 10000); 0 = free ports picked by each node. */
  readonly basePort?: number;
  /** Node i's HTTP sidecar on httpPortBase + i; 0 = free ports. */
  readonly httpPortBase?: number;
  readonly nodeTimeoutMs?: number;
  /** The nodes' LOG_LEVEL: "info" at least, the launcher waits for their "listening" line (captured, never printed). */
  readonly logLevel?: "debug" | "info";
  /** Environment for every node (CACHE_MAXMEMORY, CACHE_MIN_REPLICAS_TO_WRITE…). */
  readonly env?: NodeJS.ProcessEnv;
  /** Extra variables for node i (an announced bus port behind a proxy…). */
  readonly nodeEnv?: (index: number) => Record<string, string>;
  /** Fixed ports for node i, overriding basePort (tests that put a proxy in front of a bus). */
  readonly nodePorts?: (index: number) => { port: number; busPort: number } | undefined;
  readonly startTimeoutMs?: number;
  /** Each node in its own process group (so a test can signal its whole tree). */
  readonly detached?: boolean;
  readonly onSpawn?: (child: ChildProcess, index: number) => void;
}

export interface LaunchedNode {
  readonly index: number;
  id: string;
  host: string;
  /** Announced client and bus ports. */
  port: number;
  busPort: number;
  /** The ports the process binds (differ from the announced ones behind a proxy). */
  listenPort: number;
  listenBusPort: number;
  httpUrl: string;
  child: ChildProcess;
  /** The role the launcher gave it (failover may change the real one). */
  readonly role: "primary" | "replica";
  readonly primaryIndex: number | undefined;
  readonly output: string[];
}

const OUTPUT_LINES = 200;
const POLL_MS = 50;
const MAIN_ENTRY = fileURLToPath(new URL("../../main.ts", import.meta.url));

/** A node's "cache node listening" log line: the ports it bound and announces. */
export interface Listening {
  nodeId: string;
  respPort: number;
  busPort: number;
  announcedHost: string;
  announcedPort: number;
  announcedBusPort: number;
  url: string;
}

function launchFailure(node: string, detail: string, output: readonly string[]) {
  return clusterErrors.create("CACHE_CLUSTER_LAUNCH_FAILED", {
    detail: `node ${node}: ${detail}`,
    fields: { node, output: output.slice(-20).join("\n") },
  });
}

export class LocalCluster {
  readonly nodes: LaunchedNode[];
  readonly #options: LaunchOptions;

  constructor(nodes: LaunchedNode[], options: LaunchOptions) {
    this.nodes = nodes;
    this.#options = options;
  }

  /** A fresh admin connection to node `index`. */
  admin(index: number): Promise<AdminClient> {
    const node = this.nodes[index]!;
    return AdminClient.connect(node.host, node.listenPort, { timeoutMs: this.#timeoutMs(), ...this.#auth });
  }

  /** The nodes' requirepass (from the environment they inherit): the launcher AUTHs with it. */
  get #auth(): { auth: { password: string } } | Record<string, never> {
    const password = requirepassOf(this.#options);
    return password === "" ? {} : { auth: { password } };
  }

  #timeoutMs(): number {
    return this.#options.startTimeoutMs ?? 20_000;
  }

  /** Sends `signal` to node `index` (SIGSTOP pauses it, SIGKILL crashes it). */
  signal(index: number, signal: NodeJS.Signals): void {
    const child = this.nodes[index]!.child;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  }

  /** SIGKILL, as a crash; resolves once the process is gone. */
  async kill(index: number): Promise<void> {
    const child = this.nodes[index]!.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  /** Starts node `index` again on the same ports and dir: it reloads nodes.json and rejoins. */
  async restart(index: number): Promise<LaunchedNode> {
    const node = this.nodes[index]!;
    await this.kill(index);
    const ports = { port: node.listenPort, busPort: node.listenBusPort };
    const started = await spawnNode(this.#options, index, ports, node.output);
    node.child = started.child;
    node.id = started.listening.nodeId;
    node.httpUrl = started.listening.url;
    return node;
  }

  /** Starts one more node (an empty primary) and introduces it to the cluster (CA-03: a node joins). */
  async addNode(): Promise<LaunchedNode> {
    const index = this.nodes.length;
    const output: string[] = [];
    const { child, listening } = await spawnNode(this.#options, index, portsOf(this.#options, index), output);
    const node = describeNode(index, child, listening, { role: "primary", primaryIndex: undefined }, output);
    this.nodes.push(node);
    const first = this.nodes[0]!;
    const admins = await Promise.all(this.nodes.map((_, i) => this.admin(i)));
    try {
      await admins[index]!.call("CLUSTER", "MEET", first.host, first.port, first.busPort);
      await waitUntil(
        "every node to know the new node, and it the whole slot map",
        this.#timeoutMs(),
        async () => {
          const views = await Promise.all(admins.map((admin) => admin.call("CLUSTER", "NODES")));
          const info = await admins[index]!.call("CLUSTER", "INFO");
          const known = views.every((view) => typeof view === "string" && view.includes(node.id));
          return known && typeof info === "string" && info.includes("cluster_state:ok");
        },
      );
    } finally {
      for (const admin of admins) admin.close();
    }
    return node;
  }

  /** SIGTERM every node (SIGCONT first: a paused node cannot hear it), SIGKILL after 5 s. */
  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node) => {
        const child = node.child;
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGCONT");
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}

function requirepassOf(options: LaunchOptions): string {
  return options.env?.CACHE_REQUIREPASS ?? process.env.CACHE_REQUIREPASS ?? "";
}

function nodeEnv(options: LaunchOptions, index: number, ports: { port: number; busPort: number }) {
  const httpBase = options.httpPortBase ?? 0;
  const inherited = { ...process.env, ...options.env };
  return {
    ...inherited,
    // One password for the whole local cluster: a replica presents it to its primary unless told otherwise.
    CACHE_MASTERAUTH: inherited.CACHE_MASTERAUTH ?? requirepassOf(options),
    CACHE_HOST: options.host ?? "127.0.0.1",
    CACHE_PORT: String(ports.port),
    CACHE_CLUSTER_ENABLED: "yes",
    CACHE_CLUSTER_BUS_PORT: String(ports.busPort),
    CACHE_CLUSTER_DIR: join(options.dataDir, `node-${index}`),
    CACHE_CLUSTER_NODE_TIMEOUT: String(options.nodeTimeoutMs ?? 15_000),
    PORT: String(httpBase === 0 ? 0 : httpBase + index),
    LOG_LEVEL: options.logLevel ?? "info",
    ...options.nodeEnv?.(index),
  };
}

/**
 * Spawns node `index` (cluster mode, not yet met: a bare node) and waits for its "cache node
 * listening" log line; rejects with its output if it exits or is not listening in time. Port 0
 * lets the node pick its own ports, so nothing can take them between a choice and the bind.
 */
export function spawnNode(
  options: LaunchOptions,
  index: number,
  ports: { port: number; busPort: number },
  output: string[],
): Promise<{ child: ChildProcess; listening: Listening }> {
  const child = spawn(process.execPath, [MAIN_ENTRY], {
    env: nodeEnv(options, index, ports),
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  options.onSpawn?.(child, index);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        launchFailure(String(index), `not listening within ${options.startTimeoutMs ?? 20_000} ms`, output),
      );
    }, options.startTimeoutMs ?? 20_000);
    let pending = "";
    const onLine = (line: string) => {
      output.push(line);
      if (output.length > OUTPUT_LINES) output.splice(0, output.length - OUTPUT_LINES);
      if (!line.includes('"cache node listening"')) return;
      clearTimeout(timer);
      resolve({ child, listening: JSON.parse(line) as Listening });
    };
    const onData = (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) onLine(line);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(
        launchFailure(String(index), `exited (code ${code}, signal ${signal}) before listening`, output),
      );
    });
  });
}

function portsOf(options: LaunchOptions, index: number): { port: number; busPort: number } {
  const fixed = options.nodePorts?.(index);
  if (fixed !== undefined) return fixed;
  const base = options.basePort ?? 0;
  return base === 0 ? { port: 0, busPort: 0 } : { port: base + index, busPort: base + 10_000 + index };
}

/** Polls `check` every POLL_MS until it holds or `timeoutMs` passes (the nodes are other processes). */
export async function waitUntil(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (let round = 0; round < Math.ceil(timeoutMs / POLL_MS) + 1; round++) {
    if (await check()) return;
    if (performance.now() > deadline) break;
    await sleep(POLL_MS);
  }
  throw clusterErrors.create("CACHE_CLUSTER_LAUNCH_FAILED", { detail: `timed out waiting for ${what}` });
}

function describeNode(
  index: number,
  child: ChildProcess,
  listening: Listening,
  role: { role: "primary" | "replica"; primaryIndex: number | undefined },
  output: string[],
): LaunchedNode {
  return {
    index,
    id: listening.nodeId,
    host: listening.announcedHost,
    port: listening.announcedPort,
    busPort: listening.announcedBusPort,
    listenPort: listening.respPort,
    listenBusPort: listening.busPort,
    httpUrl: listening.url,
    child,
    role: role.role,
    primaryIndex: role.primaryIndex,
    output,
  };
}

function layout(
  options: LaunchOptions,
): Array<{ role: "primary" | "replica"; primaryIndex: number | undefined }> {
  const primaries = Math.floor(options.nodes / (options.replicas + 1));
  if (!(Number.isInteger(options.nodes) && primaries >= 1)) {
    throw clusterErrors.create("CACHE_CLUSTER_ARGS_INVALID", {
      detail: `${options.nodes} nodes cannot hold primaries with ${options.replicas} replicas each`,
    });
  }
  return Array.from({ length: options.nodes }, (_, index) =>
    index < primaries
      ? { role: "primary" as const, primaryIndex: undefined }
      : { role: "replica" as const, primaryIndex: (index - primaries) % primaries },
  );
}

function clusterInfoField(reply: Reply, field: string): string | undefined {
  if (typeof reply !== "string") return undefined;
  return new RegExp(`^${field}:(.*)$`, "m").exec(reply)?.[1]?.trim();
}

/** Spawns the nodes, forms (or resumes) the cluster, and waits until it serves. */
export async function launchCluster(options: LaunchOptions): Promise<LocalCluster> {
  const plan = layout(options);
  const started = await Promise.allSettled(
    plan.map(async (role, index) => {
      const output: string[] = [];
      const { child, listening } = await spawnNode(options, index, portsOf(options, index), output);
      return describeNode(index, child, listening, role, output);
    }),
  );
  const nodes = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const cluster = new LocalCluster(nodes, options);
  const failure = started.find((result) => result.status === "rejected");
  try {
    // One node that did not start fails the launch: the ones that did must not be left running.
    if (failure !== undefined) throw failure.reason;
    await formCluster(cluster, options);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

async function formCluster(cluster: LocalCluster, options: LaunchOptions): Promise<void> {
  const admins = await Promise.all(cluster.nodes.map((_, index) => cluster.admin(index)));
  try {
    const assigned = clusterInfoField(await admins[0]!.call("CLUSTER", "INFO"), "cluster_slots_assigned");
    if (assigned !== "16384") await createCluster(cluster, admins);
    await waitServing(cluster, admins, options.startTimeoutMs ?? 20_000);
  } finally {
    for (const admin of admins) admin.close();
  }
}

async function createCluster(cluster: LocalCluster, admins: AdminClient[]): Promise<void> {
  const primaries = cluster.nodes.filter((node) => node.role === "primary");
  const ranges = evenSlotRanges(primaries.length);
  for (const [i, node] of primaries.entries()) {
    const admin = admins[node.index]!;
    await admin.call("CLUSTER", "SET-CONFIG-EPOCH", i + 1);
    await admin.call("CLUSTER", "ADDSLOTSRANGE", ranges[i]![0], ranges[i]![1]);
  }
  const first = cluster.nodes[0]!;
  for (const node of cluster.nodes.slice(1)) {
    await admins[node.index]!.call("CLUSTER", "MEET", first.host, first.port, first.busPort);
  }
  const total = cluster.nodes.length;
  await waitUntil("every node to know every other", 20_000, async () => {
    const views = await Promise.all(admins.map((admin) => admin.call("CLUSTER", "NODES")));
    return views.every((view) => typeof view === "string" && view.trim().split("\n").length === total);
  });
  for (const node of cluster.nodes) {
    if (node.role !== "replica") continue;
    const primary = cluster.nodes[node.primaryIndex!]!;
    await admins[node.index]!.call("CLUSTER", "REPLICATE", primary.id);
  }
}

async function waitServing(cluster: LocalCluster, admins: AdminClient[], timeoutMs: number): Promise<void> {
  const replicas = cluster.nodes.filter((node) => node.role === "replica").length;
  await waitUntil("every node to serve with its replicas attached", timeoutMs, async () => {
    for (const admin of admins) {
      const info = await admin.call("CLUSTER", "INFO");
      if (clusterInfoField(info, "cluster_state") !== "ok") return false;
      const nodes = await admin.call("CLUSTER", "NODES");
      if (typeof nodes !== "string" || (nodes.match(/slave/g)?.length ?? 0) < replicas) return false;
      const role = await admin.call("ROLE");
      if (Array.isArray(role) && role[0] === "slave" && role[3] !== "connected") return false;
    }
    return true;
  });
}
