/**
 * The service under measurement, as its own process (as it runs in production, so the
 * load generator's work never shares its event loop): `src/main.ts` on port 0, ready once
 * its JSON log says where it listens. Bounded: a service that has not said so within
 * `startTimeoutMs` is killed and the bench fails with its stderr.
 *
 * @example
 * const service = await startServiceProcess({ startTimeoutMs: 30_000 });
 * await fetch(`${service.url}/healthz`);
 * await service.close();
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";

const mainPath = join(import.meta.dirname, "..", "src", "main.ts");
/** Stderr kept for the failure message: the end of it says why a start failed. */
const STDERR_KEPT_CHARS = 4_000;
/** Bound on the graceful close (SIGTERM) before SIGKILL. */
const STOP_TIMEOUT_MS = 10_000;

export interface ServiceProcess {
  readonly url: string;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

export async function startServiceProcess(options: { startTimeoutMs: number }): Promise<ServiceProcess> {
  const env = { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" };
  const child = spawn(process.execPath, [mainPath], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEPT_CHARS);
  });
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  try {
    const url = await listeningUrl(child, options.startTimeoutMs);
    return { url, child, close };
  } catch (error) {
    await close();
    throw new Error(`the service did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
}

/** The `url` of the service's "listening" log line. */
function listeningUrl(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => done(new Error(`no "listening" line within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code: number | null) => done(new Error(`it exited with code ${code}`));
    const done = (outcome: Error | string) => {
      clearTimeout(timer);
      child.off("exit", onExit);
      lines.close();
      if (typeof outcome === "string") resolve(outcome);
      else reject(outcome);
    };
    child.once("exit", onExit);
    lines.on("line", (line) => {
      try {
        const record = JSON.parse(line) as { url?: unknown; msg?: unknown };
        if (typeof record.url === "string" && String(record.msg).endsWith("listening")) done(record.url);
      } catch {
        // not a JSON log line: keep reading
      }
    });
  });
}
