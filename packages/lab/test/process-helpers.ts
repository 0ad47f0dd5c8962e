/**
 * Helpers shared by the lab's process tests: waiting on external processes (which
 * have no event to await, hence a bounded poll), and a child "test process" that
 * starts an engine and then dies, to prove the engine does not outlive it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** Bounded poll for an external process's state: there is no event to wait for. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`condition not met within ${timeoutMs} ms`);
}

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
  const script = `${body}\n${how === "exit" ? "process.exit(0);" : "setInterval(() => {}, 1_000);"}`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    cwd: packageDir, // so the body's bare imports (pg, ioredis) resolve from any working dir
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0]!);
    });
    child.once("exit", () => reject(new Error(`child exited before printing its line: ${out}`)));
  });
  if (how === "SIGKILL") child.kill("SIGKILL");
  return JSON.parse(line) as T;
}
