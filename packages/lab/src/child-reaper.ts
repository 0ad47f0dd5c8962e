/**
 * Engine processes must never outlive the test process that started them, however
 * it ends. Two guards, because each covers a case the other cannot:
 *
 * - an `exit` hook SIGKILLs every live engine's process tree and removes its temp
 *   dir synchronously, for normal exits and `process.exit()`;
 * - a watchdog `sh` per engine, holding the read end of a pipe whose write end only
 *   this process holds: when this process dies in any way (SIGKILL, a crash, a test
 *   runner's timeout), the pipe closes, `read` returns, and the watchdog kills the
 *   tree and removes the dir. No polling.
 *
 * The tree, not just the process: PostgreSQL's backends are children that left the
 * postmaster's process group (see process-tree.ts).
 *
 * @example
 * const child = spawn("redis-server", args, { detached: true });
 * const guard = guardProcessTree(child.pid!, tempDir);
 * child.once("exit", () => guard.release());
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KILL_TREE_SH, signalTree } from "./process-tree.ts";

export interface Guard {
  /** The root exited: stop guarding it (the dir stays guarded by `trackTempDir`). */
  release(): void;
}

// $1 = root pid (leader of its group), $2 = dir to remove (may be empty).
const WATCHDOG_SCRIPT = `read -r _
dir=$2
${KILL_TREE_SH}
if [ -n "$dir" ]; then rm -rf -- "$dir"; fi`;

const liveRoots = new Set<number>();
const tempDirs = new Set<string>();
let exitHooked = false;

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once("exit", () => {
    for (const root of liveRoots) signalTree(root, "SIGKILL");
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
}

/** Guards the process tree under `root` (and `dir`, removed when this process dies) until released. */
export function guardProcessTree(root: number, dir = ""): Guard {
  hookExit();
  liveRoots.add(root);
  const watchdog = spawn("sh", ["-c", WATCHDOG_SCRIPT, "casebook-reaper", String(root), dir], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  // A missing `sh` leaves only the exit hook; that is a weaker guard, not a failure.
  watchdog.on("error", () => {});
  watchdog.unref();
  (watchdog.stdin as unknown as Socket).unref();
  return {
    release: () => {
      liveRoots.delete(root);
      // SIGKILL, not closing the pipe: closing it would make the watchdog kill and remove.
      watchdog.kill("SIGKILL");
    },
  };
}

/** Removes `dir` when this process exits, until the returned function is called. */
export function trackTempDir(dir: string): () => void {
  hookExit();
  tempDirs.add(dir);
  return () => {
    tempDirs.delete(dir);
  };
}

/**
 * A fresh dir under the OS temp dir, removed when this process exits unless `remove()`
 * ran first: the home of one engine's or browser's files.
 *
 * @example
 * const { dir, remove } = await ownTempDir("casebook-redis-");
 */
export async function ownTempDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const untrack = trackTempDir(dir);
  return {
    dir,
    remove: async () => {
      await rm(dir, { recursive: true, force: true });
      untrack();
    },
  };
}
