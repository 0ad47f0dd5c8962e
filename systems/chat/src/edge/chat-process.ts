/**
 * One chat process (src/main.ts in the role its env names) on a loopback port chosen here or
 * given, so a restarted process comes back where its peers (the L4 front, the gateways' send
 * service URL) expect it. Unlike lab's server-process it can be SIGKILLed: the tests' and the
 * console scenario's crash of a gateway. Guarded by lab's reaper: it dies with its parent.
 *
 * @example
 * const gw = await startChatProcess("gw-1", { CHAT_ROLE: "gateway", CHAT_API_URL: api.url, REDIS_URL });
 * await gw.kill(); // a crash: nothing runs after it
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { freePort } from "@casebook/lab/free-port";

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));
const READY_TIMEOUT_MS = 60_000;

export interface ChatProcess {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** SIGTERM and wait for the exit (graceful: a gateway drains with 4000). */
  term(): Promise<number | null>;
  /** SIGKILL and wait: a crash, nothing runs after it. */
  kill(): Promise<void>;
}

async function ready(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

export async function startChatProcess(
  name: string,
  env: NodeJS.ProcessEnv,
  port?: number,
): Promise<ChatProcess> {
  const chosen = port ?? (await freePort());
  const url = `http://127.0.0.1:${chosen}`;
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: { ...process.env, LOG_LEVEL: "warn", ...env, PORT: String(chosen), HOST: "127.0.0.1" },
    stdio: ["ignore", "ignore", 2],
    detached: true,
  });
  const guard = guardProcessTree(child.pid!);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      guard.release();
      resolve(code);
    }),
  );
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!(await ready(url))) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited while starting`);
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${name} not ready within ${READY_TIMEOUT_MS} ms`);
    }
    await sleep(50);
  }
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    url,
    port: chosen,
    async term() {
      if (alive()) child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      if (alive()) child.kill("SIGKILL");
      await exited;
    },
  };
}
