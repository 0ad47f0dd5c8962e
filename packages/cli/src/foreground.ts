/**
 * Runs one entry of a system in the foreground — a benchmark, or one of its tools —
 * and resolves with how it ended. The child owns the terminal: its output goes straight
 * through. It runs in its own process group, so a Ctrl-C reaches it once, forwarded by
 * us, and not twice (once from the terminal, once from us).
 *
 * @example
 * const info = await runForeground(system, entry, ["--json"], pathInDataRoot(root, io.env, "payments"), io);
 * process.exitCode = exitCodeFor(info);
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import type { CliIo } from "./cli-io.ts";
import type { SystemInfo } from "./discover-systems.ts";
import type { ExitInfo } from "./system-process.ts";

const forwardedSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * `<CASEBOOK_DATA or <repo>/.casebook-data>/<name>`: a folder where a system (or its bench) keeps
 * its files, or a file of the CLI's own (the wiring keys).
 */
export function pathInDataRoot(root: string, env: NodeJS.ProcessEnv, name: string): string {
  const dataRoot =
    env.CASEBOOK_DATA !== undefined && env.CASEBOOK_DATA !== ""
      ? resolve(env.CASEBOOK_DATA)
      : join(root, ".casebook-data");
  return join(dataRoot, name);
}

/** Node 24 runs `entry` in the system's folder with the manifest's env, the caller's, and CASEBOOK_DATA. */
export function runForeground(
  system: SystemInfo,
  entry: string,
  args: readonly string[],
  dataDir: string,
  io: CliIo,
): Promise<ExitInfo> {
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: system.dir,
    env: { ...system.manifest.env, ...io.env, CASEBOOK_DATA: dataDir },
    stdio: "inherit",
    detached: true,
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const onExit = () => child.kill("SIGKILL");
  for (const signal of forwardedSignals) process.on(signal, forward);
  process.on("exit", onExit);
  return new Promise<ExitInfo>((resolvePromise) => {
    const finish = (info: ExitInfo) => {
      for (const signal of forwardedSignals) process.off(signal, forward);
      process.off("exit", onExit);
      resolvePromise(info);
    };
    child.once("error", (error) => finish({ code: null, signal: null, error }));
    child.once("exit", (code, signal) => finish({ code, signal }));
  });
}
