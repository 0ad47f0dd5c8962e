/**
 * Before the launcher spawns anything: can every port the local cluster needs be bound?
 * A cluster of N nodes needs N RESP ports (base + i) and N cluster bus ports (base +
 * 10000 + i, Redis's convention), plus the nodes' HTTP sidecars when their base is fixed
 * and the launcher's own /readyz port. Without this check a taken port surfaced as one
 * node's EADDRINUSE stack trace after the others had started (`casebook run cache --nodes
 * 6` while `npm start` ran a node on 7000). A port can still be taken between the check
 * and the node's bind; the launch then fails with that node's output.
 *
 * (The CLI has the same probe for its own plans, `packages/cli/src/port-check.ts`; a
 * system may not import the CLI, and this one also names the flag to change.)
 *
 * @example
 * const host = "127.0.0.1";
 * const plan = { host, nodes: 6, basePort: 7000, httpPortBase: 0, launcherPort: 8114, launcherHost: host };
 * await busyPorts(clusterPorts(plan)); // [{ host, port: 7000, role: "node 0 RESP", code: "EADDRINUSE", … }]
 */
import { createServer } from "node:net";
import { clusterErrors } from "../../errors.ts";

export interface NeededPort {
  readonly host: string;
  readonly port: number;
  /** What uses it, for the message: "node 3 RESP", "node 3 cluster bus", "launcher HTTP". */
  readonly role: string;
  /** How to move it: the flag and the variable. */
  readonly change: string;
}

export interface BusyPort extends NeededPort {
  /** EADDRINUSE, EACCES, EADDRNOTAVAIL… */
  readonly code: string;
}

export interface ClusterPortPlan {
  /** Where the nodes bind (RESP, bus and sidecars alike: the launcher gives them one host). */
  readonly host: string;
  readonly nodes: number;
  /** 0 = every node picks free ports: nothing to check. */
  readonly basePort: number;
  /** 0 = free ports. */
  readonly httpPortBase: number;
  /** The launcher's own HTTP port (PORT) and host (HOST); port 0 = a free one. */
  readonly launcherPort: number;
  readonly launcherHost: string;
}

const BUS_PORT_OFFSET = 10_000;
const CHANGE_BASE = "--port P or CACHE_PORT=P (node i uses P+i, its bus P+10000+i)";

/** Every fixed port the launch will bind, in the order a reader expects. */
export function clusterPorts(plan: ClusterPortPlan): NeededPort[] {
  const { host } = plan;
  const ports: NeededPort[] = [];
  for (let i = 0; i < plan.nodes && plan.basePort !== 0; i++) {
    ports.push({ host, port: plan.basePort + i, role: `node ${i} RESP`, change: CHANGE_BASE });
    const busPort = plan.basePort + BUS_PORT_OFFSET + i;
    ports.push({ host, port: busPort, role: `node ${i} cluster bus`, change: CHANGE_BASE });
  }
  for (let i = 0; i < plan.nodes && plan.httpPortBase !== 0; i++) {
    const port = plan.httpPortBase + i;
    ports.push({ host, port, role: `node ${i} HTTP sidecar`, change: "--http-port-base P" });
  }
  if (plan.launcherPort !== 0) {
    const launcher = { host: plan.launcherHost, port: plan.launcherPort };
    ports.push({ ...launcher, role: "the launcher's /readyz", change: "PORT=P" });
  }
  return ports;
}

/** Tries to bind host:port; resolves the error code when that fails, undefined when the port is free. */
export function portBindError(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** The needed ports that cannot be bound, probed all at once. */
export async function busyPorts(needed: readonly NeededPort[]): Promise<BusyPort[]> {
  const codes = await Promise.all(needed.map((p) => portBindError(p.host, p.port)));
  return needed.flatMap((p, i) => (codes[i] === undefined ? [] : [{ ...p, code: codes[i]! }]));
}

function reason(code: string): string {
  if (code === "EADDRINUSE") return "in use";
  if (code === "EACCES") return "not allowed";
  if (code === "EADDRNOTAVAIL") return "not an address of this machine";
  return code;
}

/** Throws CACHE_CLUSTER_PORT_TAKEN naming every busy port and how to move the first. */
export async function assertClusterPortsFree(plan: ClusterPortPlan): Promise<void> {
  const busy = await busyPorts(clusterPorts(plan));
  if (busy.length === 0) return;
  const listed = busy.map((b) => `${b.host}:${b.port} (${b.role}, ${reason(b.code)})`).join(", ");
  throw clusterErrors.create("CACHE_CLUSTER_PORT_TAKEN", {
    detail: `${listed}; choose ${busy.length > 1 ? "others" : "another"} with ${busy[0]!.change}`,
    fields: { busy: busy.map(({ host, port, role, code }) => ({ host, port, role, code })) },
  });
}
