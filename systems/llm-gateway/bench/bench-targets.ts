/**
 * What the bench measures, each its own process on this machine: the provider simulator
 * (src/sim/provider-main.ts, the same one for every row), our gateway twice through its
 * real entry point — plain proxying (LLM_GATEWAY_BUDGETS=false, LLM_GATEWAY_CACHE=false) and
 * full features (token budgets on the in-process counter, breakers, the semantic cache
 * looked up on every request) — and `@portkey-ai/gateway` (its published Node server,
 * `build/start-server.js --headless`) proxying to the simulator through its
 * `x-portkey-custom-host` header — and two floors: a bare Node relay (`relay-floor.ts`, what
 * one more Node process on the path costs before any gateway's work) and the same relay behind
 * the shared edge (`edge-floor.ts`, what the edge adds to it). Each target says how a chat
 * request reaches it and what its process holds in memory (RSS).
 *
 * @example
 * const targets = await openTargets({ sim: { ttftMs: 100, tokensPerS: 50, answerTokens: 100 }, databaseUrl: undefined, floors: ["floor", "edge"], portkey: true, gateways: ["plain", "full"] });
 * targets.list.map((t) => t.name); // ["direct", "floor", "edge", "portkey", "plain", "full"]
 * await targets.close();
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@casebook/lab/free-port";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";

export type TargetName = "direct" | "floor" | "edge" | "portkey" | "plain" | "full";

export interface BenchTarget {
  readonly name: TargetName;
  /** The chat completions URL and the headers a request needs there. */
  readonly url: string;
  readonly headers: Record<string, string>;
  /** The resident memory of the target's own process (the simulator's for `direct`). */
  residentBytes(): Promise<number>;
  /** CPU time (user + system) the target's own process has used so far, in ms. */
  cpuMs(): Promise<number>;
}

export interface SimProfile {
  readonly ttftMs: number;
  readonly tokensPerS: number;
  readonly answerTokens: number;
}

export interface Targets {
  readonly list: readonly BenchTarget[];
  close(): Promise<void>;
}

const ADMIN_TOKEN = "llm-gateway-bench-admin-token-0123456789";
const serviceEntry = new URL("../src/main.ts", import.meta.url);
const simEntry = new URL("../src/sim/provider-main.ts", import.meta.url);
const floorEntry = new URL("./relay-floor.ts", import.meta.url);
const edgeFloorEntry = new URL("./edge-floor.ts", import.meta.url);
/** PGlite's first start (migrations in WASM) on a loaded machine. */
const READY_TIMEOUT_MS = 180_000;

/** utime + stime from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 10 ms on Linux). */
export async function procCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) throw new Error(`/proc/${pid}/stat has no utime/stime`);
  return ticks * 10;
}

/**
 * VmRSS from /proc/<pid>/status. Every target's memory (and CPU) is read from /proc, never over
 * HTTP: our gateway's /metrics scrape (prom-client serializing every series) took 17–47 ms on its
 * event loop at load 8–12 — a stall in the middle of the streams it was measuring, which Portkey
 * (read from /proc) never had.
 */
async function procResident(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`/proc/${pid}/status has no VmRSS`);
  return Number(match[1]) * 1024;
}

async function startGateway(
  name: "plain" | "full",
  simUrl: string,
  databaseUrl: string | undefined,
  dataDir: string,
): Promise<{ server: ServerProcess; target: BenchTarget }> {
  const features =
    name === "plain"
      ? { LLM_GATEWAY_BUDGETS: "false", LLM_GATEWAY_CACHE: "false" }
      : // A lookup on every request that misses (what the row measures): the lexical embedder
        // rates two long made-up prompts up to ~0.96 alike, so only near-identity may hit here.
        { LLM_GATEWAY_BUDGETS: "true", LLM_GATEWAY_CACHE: "true", LLM_GATEWAY_CACHE_THRESHOLD: "0.999" };
  const server = await startServerProcess({
    name: `llm-gateway (${name})`,
    entry: serviceEntry,
    readyTimeoutMs: READY_TIMEOUT_MS,
    env: {
      ...(databaseUrl === undefined
        ? { CASEBOOK_DATA: join(dataDir, name) }
        : { DATABASE_URL: databaseUrl, LLM_GATEWAY_DB_SCHEMA: `llm_gateway_bench_${name}` }),
      LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
      LLM_GATEWAY_MODELS: "gpt-4o-mini",
      LLM_GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      LLM_GATEWAY_BOOTSTRAP_TENANT: "off",
      // 500 streams each read the key table and write a usage row: more than the default 10.
      LLM_GATEWAY_DB_MAX_CONNECTIONS: "30",
      ...features,
    },
  });
  // Limits far above the run: the budgets are reserved and settled, never refused.
  const res = await fetch(`${server.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({
      id: `bench-${Date.now()}`,
      name: "bench",
      rpm: 100_000_000,
      tpm: 1_000_000_000_000,
    }),
  });
  if (res.status !== 201) throw new Error(`creating the bench tenant: ${res.status} ${await res.text()}`);
  const { apiKey } = (await res.json()) as { apiKey: { key: string } };
  return {
    server,
    target: {
      name,
      url: `${server.url}/v1/chat/completions`,
      headers: { authorization: `Bearer ${apiKey.key}` },
      residentBytes: () => procResident(server.pid),
      cpuMs: () => procCpuMs(server.pid),
    },
  };
}

/** Portkey's Node server on a free port; ready once it prints so. */
async function startPortkey(simUrl: string): Promise<{ child: SpawnedChild; target: BenchTarget }> {
  const require = createRequire(import.meta.url);
  const entry = join(require.resolve("@portkey-ai/gateway/package.json"), "..", "build", "start-server.js");
  const port = await freePort();
  const child = await spawnChild(entry, {
    args: [`--port=${port}`, "--headless"],
    env: { ...process.env, NODE_ENV: "production" },
    ready: (line) => line.includes("Ready for connections"),
    readyTimeoutMs: 60_000,
    queueLines: true,
  });
  return {
    child,
    target: {
      name: "portkey",
      url: `http://127.0.0.1:${port}/v1/chat/completions`,
      headers: {
        authorization: "Bearer sk-bench",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": `${simUrl}/v1`,
      },
      residentBytes: () => procResident(child.pid),
      cpuMs: () => procCpuMs(child.pid),
    },
  };
}

/**
 * A floor: the bare Node relay (`relay-floor.ts`: what one more Node process on the path costs),
 * or the same relay behind the shared edge (`edge-floor.ts`: what the edge adds to it).
 */
async function startFloor(
  name: "floor" | "edge",
  simUrl: string,
): Promise<{ server: ServerProcess; target: BenchTarget }> {
  const server = await startServerProcess({
    name: name === "floor" ? "relay floor" : "edge floor",
    entry: name === "floor" ? floorEntry : edgeFloorEntry,
    env: { FLOOR_UPSTREAM_URL: `${simUrl}/v1` },
  });
  return {
    server,
    target: {
      name,
      url: `${server.url}/v1/chat/completions`,
      headers: { authorization: "Bearer sk-bench" },
      residentBytes: () => procResident(server.pid),
      cpuMs: () => procCpuMs(server.pid),
    },
  };
}

export async function openTargets(options: {
  sim: SimProfile;
  databaseUrl: string | undefined;
  floors: readonly ("floor" | "edge")[];
  portkey: boolean;
  gateways: readonly ("plain" | "full")[];
}): Promise<Targets> {
  const closers: Array<() => Promise<void>> = [];
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-llm-bench-"));
  closers.push(() => rm(dataDir, { recursive: true, force: true }));
  const close = async () => {
    await Promise.allSettled(closers.reverse().map((stop) => stop()));
  };
  try {
    const sim = await startServerProcess({
      name: "llm-provider-sim",
      entry: simEntry,
      env: {
        PROVIDER_SEED: "1",
        PROVIDER_TTFT_MS: String(options.sim.ttftMs),
        PROVIDER_TOKENS_PER_S: String(options.sim.tokensPerS),
        PROVIDER_ANSWER_TOKENS: String(options.sim.answerTokens),
      },
    });
    closers.push(() => sim.stop());
    const list: BenchTarget[] = [
      {
        name: "direct",
        url: `${sim.url}/v1/chat/completions`,
        headers: { authorization: "Bearer sk-bench" },
        residentBytes: () => procResident(sim.pid),
        cpuMs: () => procCpuMs(sim.pid),
      },
    ];
    for (const name of options.floors) {
      const floor = await startFloor(name, sim.url);
      closers.push(() => floor.server.stop());
      list.push(floor.target);
    }
    if (options.portkey) {
      const portkey = await startPortkey(sim.url);
      closers.push(() => portkey.child.stop());
      list.push(portkey.target);
    }
    for (const name of options.gateways) {
      const gateway = await startGateway(name, sim.url, options.databaseUrl, dataDir);
      closers.push(() => gateway.server.stop());
      list.push(gateway.target);
    }
    return { list, close };
  } catch (error) {
    await close();
    throw error;
  }
}
