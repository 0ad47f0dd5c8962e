/**
 * `casebook run cache -- --nodes 6 --replicas 1`: a local Redis-Cluster-compatible
 * cluster of cache nodes. Spawns the node processes on ports 7000+ (bus 17000+), splits
 * the 16 384 slots evenly over the primaries, attaches the replicas, waits until every
 * node serves, prints the layout, and serves /healthz and /readyz (every node ok) on
 * PORT for the casebook CLI. Each node has its own /metrics (the layout lists them).
 * SIGINT/SIGTERM stop every node gracefully.
 *
 * @example
 * // node systems/cache/src/cluster-main.ts --nodes 6 --replicas 1
 * // redis-cli -c -p 7000 SET k v     (-c follows -MOVED like any cluster client)
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { installSignalHandlers } from "@casebook/infra/http/shutdown";
import { startService } from "@casebook/infra/http/start-service";
import { ConfigError, type ConfigOf, describeConfig, field, loadConfig } from "@casebook/kit/config";
import { CasebookError } from "@casebook/kit/errors";
import { AdminClient } from "./cluster/clients/cluster-admin-client.ts";
import { type LaunchedNode, type LocalCluster, launchCluster } from "./cluster/workers/cluster-launcher.ts";
import { assertClusterPortsFree } from "./cluster/workers/cluster-port-check.ts";
import { configSchema } from "./config.ts";
import { bindRefusal } from "./domain/bind-guard.ts";
import { clusterErrors } from "./errors.ts";

const HELP = `cache cluster launcher — a local cluster of cache nodes

  --nodes N              nodes to start (required; primaries = N / (replicas + 1))
  --replicas R           replicas per primary (default 1)
  --port P               first node's RESP port (default CACHE_PORT, else 7000); node i uses P+i,
                         its cluster bus P+10000+i; 0 = free ports
  --host H               address the nodes listen on and announce (default CACHE_HOST, else 127.0.0.1)
  --node-timeout MS      failure detection timeout (default 15000, Redis's)
  --data-dir DIR         where each node keeps nodes.json (default $CASEBOOK_DATA/cluster)
  --http-port-base P     node i's /metrics on P + i (default: free ports, listed in the layout)
  --help                 this text

Every port is checked before any node starts; a taken one is named with the way around it.
The nodes inherit the environment (CACHE_MAXMEMORY, CACHE_REQUIREPASS…). The launcher reads:
`;

/**
 * What the launcher reads from the environment, through the schema like every setting (a bad
 * value is named; --help lists them): the flags --port and --host win over CACHE_PORT and
 * CACHE_HOST, which are the nodes' own settings (config.ts) read here as the base.
 */
export const launcherConfigSchema = {
  ...listenFields({
    port: 8114,
    portDescription: "The launcher's /healthz and /readyz",
    hostDescription: "The launcher's HTTP interface",
  }),
  basePort: {
    ...configSchema.port,
    description: "Node 0's RESP port (node i: +i, its bus: +10000+i); --port wins",
  },
  nodeHost: {
    ...configSchema.host,
    description: "The address the nodes listen on and announce; --host wins",
  },
  requirepass: configSchema.requirepass,
  dataDir: field.string({
    env: "CASEBOOK_DATA",
    default: join(".casebook-data", "cache"),
    description:
      "This system's data directory (`casebook run` sets it): the nodes keep nodes.json in <dir>/cluster unless --data-dir says otherwise",
  }),
  ...logLevelField(),
};

export type LauncherConfig = ConfigOf<typeof launcherConfigSchema>;

/** The environment through the schema; a bad value is the launcher's "args invalid" (exit 2), named. */
function loadLauncherConfig(env: NodeJS.ProcessEnv): LauncherConfig {
  try {
    return loadConfig(launcherConfigSchema, { env });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw clusterErrors.create("CACHE_CLUSTER_ARGS_INVALID", {
      detail: error.problems.map((p) => p.message).join("; "),
      fields: { flag: error.problems[0]?.env ?? "" },
      cause: error,
    });
  }
}

/** True when the command line asks for a cluster (main.ts hands over to this file). */
export function isClusterLaunch(argv: readonly string[]): boolean {
  return argv.some((arg) => arg === "--nodes" || arg.startsWith("--nodes="));
}

interface LauncherArgs {
  readonly nodes: number;
  readonly replicas: number;
  readonly port: number;
  readonly host: string;
  readonly nodeTimeoutMs: number;
  readonly dataDir: string;
  readonly httpPortBase: number;
  /** The launcher's own settings, from the environment. */
  readonly config: LauncherConfig;
}

function integer(
  value: string | undefined,
  flag: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!(Number.isInteger(parsed) && parsed >= min && parsed <= max)) {
    throw clusterErrors.create("CACHE_CLUSTER_ARGS_INVALID", {
      detail: `${flag}=${value}: expected an integer ${min}..${max}`,
      fields: { flag },
    });
  }
  return parsed;
}

/** The flags over the environment (through `launcherConfigSchema`); undefined for --help. */
export function parseLauncherArgs(argv: readonly string[], env: NodeJS.ProcessEnv): LauncherArgs | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      nodes: { type: "string" },
      replicas: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      "node-timeout": { type: "string" },
      "data-dir": { type: "string" },
      "http-port-base": { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) return undefined;
  const config = loadLauncherConfig(env);
  const nodes = integer(values.nodes, "--nodes", 0, 1, 100);
  const replicas = integer(values.replicas, "--replicas", 1, 0, 10);
  return {
    nodes,
    replicas,
    port: integer(
      values.port ?? String(config.basePort),
      values.port === undefined ? "CACHE_PORT" : "--port",
      7000,
      0,
      55_535 - nodes,
    ),
    host: values.host ?? config.nodeHost,
    nodeTimeoutMs: integer(values["node-timeout"], "--node-timeout", 15_000, 100, 3_600_000),
    dataDir: values["data-dir"] ?? join(config.dataDir, "cluster"),
    httpPortBase: integer(values["http-port-base"], "--http-port-base", 0, 0, 65_000),
    config,
  };
}

function layoutTable(cluster: LocalCluster): string {
  const byIndex = (index: number | undefined) => (index === undefined ? "-" : `node ${index}`);
  const rows = cluster.nodes.map((node: LaunchedNode) => [
    `node ${node.index}`,
    `${node.host}:${node.port}`,
    String(node.busPort),
    node.role,
    byIndex(node.primaryIndex),
    node.id.slice(0, 12),
    `${node.httpUrl}/metrics`,
  ]);
  const header = ["node", "address", "bus", "role", "replica of", "id", "metrics"];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

async function allServing(cluster: LocalCluster, password: string): Promise<void> {
  const auth = password === "" ? {} : { auth: { password } };
  for (const node of cluster.nodes) {
    const admin = await AdminClient.connect(node.host, node.listenPort, { timeoutMs: 500, ...auth });
    try {
      const info = await admin.call("CLUSTER", "INFO");
      if (typeof info !== "string" || !info.includes("cluster_state:ok")) {
        throw new Error(`node ${node.index} (${node.host}:${node.port}) is not serving`);
      }
    } finally {
      admin.close();
    }
  }
}

/** Runs the launcher until a signal stops it; returns the exit code. */
export async function runClusterMain(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseLauncherArgs(argv, env);
  if (args === undefined) {
    process.stdout.write(
      `${HELP}${describeConfig(launcherConfigSchema)
        .map((line) => `  ${line}`)
        .join("\n")}\n`,
    );
    return 0;
  }
  const { config } = args;
  const listen = { port: config.port, host: config.host };
  const refusal = bindRefusal(args.host, config.requirepass, "--host");
  if (refusal !== undefined) {
    throw clusterErrors.create("CACHE_CLUSTER_ARGS_INVALID", { detail: refusal, fields: { flag: "--host" } });
  }
  // Every port checked before any node starts: a taken one is named, nothing is left half-started.
  await assertClusterPortsFree({
    host: args.host,
    nodes: args.nodes,
    basePort: args.port,
    httpPortBase: args.httpPortBase,
    launcherPort: listen.port,
    launcherHost: listen.host,
  });
  // The cluster is launched inside the start sequence, so a launcher that cannot listen stops its nodes.
  const {
    url,
    service,
    built: cluster,
  } = await startService({
    service: {
      name: "cache-cluster",
      version: "0.1.0",
      log: { level: config.logLevel },
      description: "Launcher of a local cache cluster: /readyz is ready while every node serves",
    },
    build: async ({ service }) => {
      const cluster = await launchCluster({
        nodes: args.nodes,
        replicas: args.replicas,
        basePort: args.port,
        host: args.host,
        dataDir: args.dataDir,
        nodeTimeoutMs: args.nodeTimeoutMs,
        httpPortBase: args.httpPortBase,
      });
      // The nodes must not outlive the launcher, however it ends (a graceful stop SIGTERMs them first).
      process.once("exit", () => {
        for (const node of cluster.nodes) node.child.kill("SIGKILL");
      });
      service.addCheck("cluster", () => allServing(cluster, config.requirepass));
      service.onClose(() => cluster.stop());
      return cluster;
    },
    listen,
    listening: () => ({ nodes: args.nodes, replicas: args.replicas }),
  });
  process.stdout.write(`cache cluster: ${args.nodes} nodes, ${args.replicas} replica(s) per primary\n`);
  process.stdout.write(`${layoutTable(cluster)}\nlauncher: ${url}/readyz\n`);
  installSignalHandlers(service);
  return 0;
}

/**
 * What main.ts runs for `--nodes`: a flag, a setting or a taken port is one line on stderr
 * and a non-zero exit (2 for what the operator typed, 1 for the rest), never a stack trace;
 * anything else is a bug and keeps its stack.
 */
export async function runClusterEntry(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  err: (text: string) => void = (text) => process.stderr.write(text),
): Promise<number> {
  try {
    return await runClusterMain(argv, env);
  } catch (error) {
    const typed = clusterErrors.is(error) || error instanceof CasebookError;
    const isArgs =
      clusterErrors.is(error, "CACHE_CLUSTER_ARGS_INVALID") ||
      (error as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS") === true;
    if (!typed && !isArgs) throw error;
    const code = error instanceof CasebookError ? `${error.code}: ` : "";
    err(`cache cluster: could not start: ${code}${(error as Error).message}\n`);
    return isArgs ? 2 : 1;
  }
}

if (import.meta.main) {
  process.exitCode = await runClusterEntry(process.argv.slice(2), process.env);
}
