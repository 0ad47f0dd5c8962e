/**
 * The service under measurement, as its own process (as it runs in production, so the
 * load generator never shares its event loop): `src/main.ts` on a free loopback port,
 * ready once `/readyz` answers 200, guarded by lab's reaper so it dies with the bench
 * however the bench ends. LOG_LEVEL=warn, as the house's benches run theirs: a JSON line
 * per request would measure the log, not the service. Its output goes to the bench's
 * stderr; the bench's stdout carries only the report. (payments' `bench/saga-processes.ts`
 * starts its services the same way.)
 *
 * @example
 * const service = await startServiceProcess();
 * await fetch(`${service.url}/healthz`);
 * await service.close();
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { freePort } from "@casebook/lab/free-port";

const mainPath = join(import.meta.dirname, "..", "src", "main.ts");
/** A start on a loaded machine: TypeScript stripping, then listen. */
const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 50;
/** Bound on one readiness probe. */
const PROBE_TIMEOUT_MS = 1_000;
/** A graceful close drains in-flight requests; past this the child is killed. */
const STOP_TIMEOUT_MS = 10_000;

export interface ServiceProcess {
  readonly url: string;
  /** SIGTERM (graceful), SIGKILL after STOP_TIMEOUT_MS. Idempotent. */
  close(): Promise<void>;
}

async function answersReady(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false; // not listening yet
  }
}

/** Starts the service; resolves once it is ready, rejects when it exits or stays unready. */
export async function startServiceProcess(): Promise<ServiceProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [mainPath], {
    env: { ...process.env, LOG_LEVEL: "warn", PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", 2, 2],
    detached: true,
  });
  const guard = guardProcessTree(child.pid!);
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      guard.release();
      resolve();
    }),
  );
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!(await answersReady(url))) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `the service exited while starting (code ${child.exitCode}, signal ${child.signalCode})`,
      );
    }
    if (performance.now() > deadline) {
      await close();
      throw new Error(`the service was not ready at ${url} within ${READY_TIMEOUT_MS} ms`);
    }
    await sleep(READY_POLL_MS);
  }
  return { url, close };
}
