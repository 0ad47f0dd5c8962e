/**
 * The processes of the bank workload (bank-workload.test.ts): the acquirer simulator in a child
 * process of its own (bank-workload-acquirer-child.ts), driven through its admin API, and N
 * payments service processes (bank-workload-service-child.ts) on one PostgreSQL schema, each a
 * lab EngineProcess so a test can SIGKILL one as a crash would and restart it on the same port.
 * Every child is guarded by lab's reaper: none outlives the test process, however it ends.
 *
 * @example
 * const acquirer = await startAcquirer({ ACQUIRER_SEED: "7" });
 * const services = await startServices(3, { DATABASE_URL: url, PAYMENTS_DB_SCHEMA: schema, ACQUIRER_URL: acquirer.url });
 * await services.kill(0); await services.restart(0);
 * await services.stop(); await acquirer.stop();
 */
import { fileURLToPath } from "node:url";
import type { FaultCounters } from "@casebook/infra/http/simulator-faults";
import { EngineProcess } from "@casebook/lab/engine-process";
import { httpProbe } from "@casebook/lab/http-probe";
import { spawnChild } from "@casebook/lab/spawn-child";
import type { Behaviour } from "../src/sim/acquirer-behaviour.ts";
import type { AcquirerStats } from "../src/sim/acquirer-state.ts";

/** GET /admin/stats: the simulator's counters and its fault counters. */
export type AcquirerCounters = AcquirerStats & { faults: FaultCounters };

const ACQUIRER_CHILD = fileURLToPath(new URL("./bank-workload-acquirer-child.ts", import.meta.url));
const SERVICE_CHILD = fileURLToPath(new URL("./bank-workload-service-child.ts", import.meta.url));
/** A child starting on a loaded 2-core machine: TypeScript stripping, migrations check, listen. */
const START_TIMEOUT_MS = 30_000;
/** Bound on one admin call to the simulator (it is never faulted, so this only catches a hang). */
const ADMIN_TIMEOUT_MS = 5_000;
/** Bound on a graceful stop before the child is killed. */
const STOP_TIMEOUT_MS = 5_000;

export interface AcquirerProcess {
  readonly url: string;
  /** Changes some failure knobs (PUT /admin/behaviour); the others keep their value. */
  behave(patch: Partial<Behaviour>): Promise<void>;
  stats(): Promise<AcquirerCounters>;
  /** Any admin or API call, JSON in and out. */
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown; text: string }>;
  /** Moves the simulator's clock forward; resolves its new time. */
  advance(ms: number): Promise<number>;
  stop(): Promise<void>;
}

async function callJson(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  const json = res.headers.get("content-type")?.includes("json") && text !== "" ? JSON.parse(text) : {};
  return { status: res.status, body: json as unknown, text };
}

/** Starts the simulator process; `env` adds to this process's environment (PORT defaults to 0). */
export async function startAcquirer(env: NodeJS.ProcessEnv): Promise<AcquirerProcess> {
  // Its first line is its address; then one answer line per command on stdin.
  const child = await spawnChild(ACQUIRER_CHILD, {
    env: { ...process.env, PORT: "0", LOG_LEVEL: "silent", ...env },
    readyTimeoutMs: START_TIMEOUT_MS,
    stopTimeoutMs: STOP_TIMEOUT_MS,
  });
  const { url } = JSON.parse(child.readyLine) as { url: string };
  const call = (method: string, path: string, body?: unknown) => callJson(url, method, path, body);
  return {
    url,
    call,
    behave: async (patch) => {
      const res = await call("PUT", "/admin/behaviour", patch);
      if (res.status !== 200) throw new Error(`PUT /admin/behaviour answered ${res.status}: ${res.text}`);
    },
    stats: async () => (await call("GET", "/admin/stats")).body as AcquirerCounters,
    advance: async (ms) => {
      child.send(`advance ${ms}`);
      const answer = JSON.parse(await child.nextLine(ADMIN_TIMEOUT_MS)) as { nowMs?: number; error?: string };
      if (answer.nowMs === undefined) throw new Error(`acquirer child: ${answer.error}`);
      return answer.nowMs;
    },
    stop: () => child.stop({ line: "stop" }),
  };
}

export interface ServiceCluster {
  /** Base URLs of the services running now (a killed one drops out until restarted). */
  live(): string[];
  /** SIGKILL, as a crash: no drain, no lease given back. */
  kill(slot: number): Promise<void>;
  /** Starts a killed service again on its port. */
  restart(slot: number): Promise<void>;
  /** Graceful stop of every service (SIGTERM: drain, stop the workers, close the pool). */
  stop(): Promise<void>;
}

async function ready(port: number): Promise<boolean> {
  return (await httpProbe(port, "/readyz"))?.status === 200;
}

/** Starts `count` payments services at once; `env` adds to this process's environment. */
export async function startServices(count: number, env: NodeJS.ProcessEnv): Promise<ServiceCluster> {
  const launch = (slot: number) =>
    EngineProcess.start(
      {
        name: `payments-${slot}`,
        command: process.execPath,
        args: (port) => [SERVICE_CHILD, String(port)],
        cwd: process.cwd(),
        tempDir: "",
        env: { ...process.env, LOG_LEVEL: "silent", ...env },
        isReady: ready,
        requestStop: async (_port, child) => void child.kill("SIGTERM"),
      },
      { readyTimeoutMs: START_TIMEOUT_MS, stopTimeoutMs: STOP_TIMEOUT_MS },
    );
  const engines = await Promise.all(Array.from({ length: count }, (_, slot) => launch(slot)));
  const at = (slot: number) => {
    const engine = engines[slot];
    if (engine === undefined) throw new RangeError(`no service in slot ${slot}`);
    return engine;
  };
  return {
    live: () => engines.filter((e) => e.state === "running").map((e) => `http://127.0.0.1:${e.port}`),
    kill: (slot) => at(slot).kill(),
    restart: (slot) => at(slot).restart(),
    stop: async () => {
      await Promise.all(engines.map((engine) => engine.shutdown()));
    },
  };
}
