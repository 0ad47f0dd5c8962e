/**
 * One process per embedded data directory. PGlite, unlike a Postgres server, takes no
 * lock on its data directory (no postmaster.pid): two processes opening the same one
 * both start, and both write — a corrupted database. A lock file beside the
 * directory, created with O_EXCL and holding the owner's pid, refuses the second
 * opener while the first is alive and is taken over once its owner is dead.
 *
 * Limit: two processes that find the SAME stale lock at the same instant can both
 * take it over (there is no atomic compare-and-replace on a file). It needs a crash
 * followed by two simultaneous starts; the window is one unlink + create.
 *
 * @example
 * const lock = acquireDataDirLock("/srv/casebook/.casebook-data/payments");
 * try { ... } finally { lock.release(); }
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { sqlErrors } from "./sql-errors.ts";

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file; idempotent. */
  release(): void;
}

/** The lock file guarding `dataDir`: beside it, because PGlite wants the directory to itself. */
export function lockPathOf(dataDir: string): string {
  return `${dataDir.replace(/\/+$/, "")}.lock`;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else — alive.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8").trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // vanished or unreadable: treat as stale
  }
}

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Takes the lock for `dataDir` or throws `SQL_DATA_DIR_IN_USE` naming the live owner. */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const path = lockPathOf(dataDir);
  // Two rounds: the first may find a stale lock and remove it; a second failure means a live owner won.
  for (let round = 0; round < 2; round++) {
    if (tryCreate(path)) return heldLock(path);
    const owner = ownerOf(path);
    if (owner !== undefined && processAlive(owner)) {
      throw sqlErrors.create("SQL_DATA_DIR_IN_USE", { fields: { dataDir, lockFile: path, pid: owner } });
    }
    try {
      unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  throw sqlErrors.create("SQL_DATA_DIR_IN_USE", { fields: { dataDir, lockFile: path } });
}

function heldLock(path: string): DataDirLock {
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      try {
        unlinkSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    },
  };
}
