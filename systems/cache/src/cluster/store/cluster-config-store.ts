/**
 * Where a node keeps its cluster config: `nodes.json` in its data dir, written whole
 * to a temp file, fsynced, then renamed over the old one, so a crash leaves either the
 * old or the new config, never half of one. Writes are synchronous and happen before
 * the node acts on the change it records — a vote is on disk before it is sent, so a
 * node that crashes and restarts cannot vote twice in one epoch. A lock file keeps a
 * second process off the same dir.
 *
 * @example
 * const store = new ClusterConfigStore("/data/cache/node-7000");
 * const state = store.load() ?? new ClusterState(myself);
 * store.save(state);
 * store.close();
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { acquireDataDirLock, type DataDirLock } from "@casebook/infra/sql/data-dir-lock";
import { decodeClusterConfig, encodeClusterConfig } from "../domain/cluster-config-codec.ts";
import type { ClusterState } from "../domain/cluster-state.ts";

export const CLUSTER_CONFIG_FILE = "nodes.json";

export class ClusterConfigStore {
  readonly dir: string;
  readonly file: string;
  readonly #lock: DataDirLock;
  #savedVersion = -1;

  constructor(dir: string) {
    this.dir = dir;
    this.file = join(dir, CLUSTER_CONFIG_FILE);
    mkdirSync(dir, { recursive: true });
    this.#lock = acquireDataDirLock(dir);
  }

  /** The saved state, or undefined for a node that never saved one (a new member). */
  load(): ClusterState | undefined {
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const state = decodeClusterConfig(text, this.file);
    this.#savedVersion = state.version;
    return state;
  }

  /** Saves when the state changed since the last save; returns whether it wrote. */
  saveIfChanged(state: ClusterState): boolean {
    if (state.version === this.#savedVersion) return false;
    this.save(state);
    return true;
  }

  save(state: ClusterState): void {
    const temp = `${this.file}.tmp-${process.pid}`;
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, encodeClusterConfig(state));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, this.file);
    // The rename itself must survive a crash: fsync the directory entry too.
    const dirFd = openSync(this.dir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    this.#savedVersion = state.version;
  }

  close(): void {
    this.#lock.release();
  }
}
