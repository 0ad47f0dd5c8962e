/**
 * Helpers shared by the lab's process tests: waiting on external processes (which
 * have no event to await, hence a bounded poll), and a child "test process" that
 * starts an engine and then dies, to prove the engine does not outlive it.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { spawnChild } from "../src/spawn-child.ts";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** Bounded poll for an external process's state: there is no event to wait for. */
export { eventually } from "../src/eventually.ts";

/** The error code a fresh TCP connection to the port fails with ("" when it connects). */
export function connectErrorCode(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve("");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** True while `pid` runs (a zombie, dead but not yet reaped by init, counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * Runs `body` (an ES module body with top-level await) in a fresh Node process,
 * reads the first line it prints as JSON, then, for "SIGKILL", kills that process.
 * The body must print its line and then either exit or idle.
 */
export async function runThenDie<T>(body: string, how: "SIGKILL" | "exit"): Promise<T> {
  const code = `${body}\n${how === "exit" ? "process.exit(0);" : "setInterval(() => {}, 1_000);"}`;
  // cwd: so the body's bare imports (pg, ioredis) resolve from any working dir.
  const child = await spawnChild({ code }, { cwd: packageDir });
  if (how === "SIGKILL") await child.kill("SIGKILL");
  return JSON.parse(child.readyLine) as T;
}
