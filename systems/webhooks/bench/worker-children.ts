/**
 * The parent's side of worker PROCESSES (bench/worker-process.ts): fork one with its
 * configuration, wait for its messages with a bound, stop it with a drain, or SIGKILL it.
 *
 * @example
 * const child = startWorkerProcess({ url, schema, workerId: "w1", … });
 * await child.next("ready");
 * await child.stop();
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { WorkerProcessConfig, WorkerProcessMessage } from "./worker-process.ts";

const WORKER_PROCESS = fileURLToPath(new URL("./worker-process.ts", import.meta.url));
/** Bound on any wait for a child's message: generous for a loaded 2-core machine, still finite. */
export const CHILD_WAIT_MS = 60_000;

export interface WorkerChild {
  readonly child: ChildProcess;
  /** Resolves when the child reported `kind`; rejects if it exits first or after CHILD_WAIT_MS. */
  next<K extends WorkerProcessMessage["kind"]>(kind: K): Promise<Extract<WorkerProcessMessage, { kind: K }>>;
  /** Asks for a draining stop and waits for it; idempotent. */
  stop(): Promise<void>;
  /** SIGKILL: the crash, nothing drained. */
  kill(): Promise<void>;
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function nextMessage<K extends WorkerProcessMessage["kind"]>(
  child: ChildProcess,
  name: string,
  kind: K,
): Promise<Extract<WorkerProcessMessage, { kind: K }>> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    const fail = (error: Error) => {
      cleanup();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`${name}: no "${kind}" in ${CHILD_WAIT_MS} ms`)),
      CHILD_WAIT_MS,
    );
    const onExit = (code: number | null) => fail(new Error(`${name} exited (${code}) before "${kind}"`));
    const onMessage = (message: WorkerProcessMessage) => {
      if (message.kind !== kind) return;
      cleanup();
      resolve(message as Extract<WorkerProcessMessage, { kind: K }>);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}

/** Forks one worker process; it starts delivering at once and says "ready". */
export function startWorkerProcess(config: WorkerProcessConfig): WorkerChild {
  const child = fork(WORKER_PROCESS, [JSON.stringify(config)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let stopping: Promise<void> | undefined;
  return {
    child,
    next: (kind) => nextMessage(child, config.workerId, kind),
    stop() {
      if (stopping === undefined && alive(child) && child.connected) {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        const stopped = nextMessage(child, config.workerId, "stopped");
        child.send("stop");
        // After "stopped" the child exits by itself; waiting for it lets it finish cleanly.
        stopping = stopped.then(() => exited);
      }
      return stopping ?? Promise.resolve();
    },
    async kill() {
      if (!alive(child)) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
