/**
 * A bench's server under measurement, as its own process through its real entry point (the
 * composition `npm start` runs), so the load generator never shares an event loop with what
 * it measures. It gets a free loopback port (PORT, HOST) and its environment over this
 * process's (LOG_LEVEL=warn unless given: a JSON line per request would measure the log), is
 * ready once `/readyz` answers 200, and is guarded by lab's reaper so it dies with the bench
 * however the bench ends. Its output goes to the bench's stderr; stdout carries the report.
 *
 * @example
 * const acquirer = await startServerProcess({ name: "acquirer-sim", entry: acquirerEntry, env: { ACQUIRER_LATENCY_MS: "5" } });
 * const service = await startServerProcess({ name: "payments", entry: serviceEntry, env: { DATABASE_URL, ACQUIRER_URL: acquirer.url } });
 * await service.stop(); await acquirer.stop();
 * // a crash and a restart on the same port: await service.kill(); await startServerProcess({ …, port: Number(new URL(service.url).port) });
 * // a program of its own (a built Go server) instead of a Node entry: entry: { program: "/tmp/…/centrifuge-server" }
 */

import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { childNodeFlags } from "./child-node-flags.ts";
import { guardProcessTree } from "./child-reaper.ts";
import { freePort } from "./free-port.ts";

/** A start on a loaded machine: TypeScript stripping, migrations checked, listen. */
const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 50;
/** A graceful stop drains in-flight requests and the workers; past this the child is killed. */
const STOP_TIMEOUT_MS = 10_000;

export interface ServerProcess {
  readonly name: string;
  readonly url: string;
  /** The Node process's id (for /proc readings such as lab's treeCpuSeconds). */
  readonly pid: number;
  /** SIGTERM (graceful), SIGKILL after STOP_TIMEOUT_MS. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash: nothing drained, every socket dropped); resolves once it exited. */
  kill(): Promise<void>;
}

async function answersReady(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** What a server process is: its name in logs, what runs, and its environment. */
export interface ServerSpec {
  name: string;
  /** A Node entry point (run with this Node and its flags), or a program of its own, run as it is. */
  entry: URL | { program: string };
  env: NodeJS.ProcessEnv;
}

/**
 * Starts `entry` (with Node, unless it is a program) on a free loopback port (PORT) and `env` over this process's
 * environment; resolves once it is ready, rejects when it exits or stays unready.
 */
export async function startServerProcess(
  options: ServerSpec & {
    /** Bound on becoming ready; default 30 s (an embedded PGlite's first start on a loaded machine needs more). */
    readyTimeoutMs?: number;
    /** This port instead of a free one: a restart where its clients reconnect (the old one must have exited). */
    port?: number;
  },
): Promise<ServerProcess> {
  const readyTimeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const [command, args] =
    options.entry instanceof URL
      ? [process.execPath, [...childNodeFlags(), fileURLToPath(options.entry)]]
      : [options.entry.program, []];
  const child = spawn(command, args, {
    env: { ...process.env, LOG_LEVEL: "warn", ...options.env, PORT: String(port), HOST: "127.0.0.1" },
    // Its stdout (JSON logs) to our stderr: the bench's stdout carries only the report.
    stdio: ["ignore", 2, 2],
    detached: true,
  });
  if (child.pid === undefined) {
    // A program that cannot be run (missing, not executable): spawn reports it on the next tick.
    const error = await new Promise<Error>((resolve) => child.once("error", resolve));
    throw new Error(`${options.name}: ${command} did not start: ${error.message}`);
  }
  const guard = guardProcessTree(child.pid);
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      guard.release();
      resolve();
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const deadline = performance.now() + readyTimeoutMs;
  while (!(await answersReady(url))) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${options.name} exited while starting (code ${child.exitCode}, signal ${child.signalCode})`,
      );
    }
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`${options.name} not ready at ${url} within ${readyTimeoutMs} ms`);
    }
    await sleep(READY_POLL_MS);
  }
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await exited;
  };
  return { name: options.name, url, pid: child.pid!, stop, kill };
}
