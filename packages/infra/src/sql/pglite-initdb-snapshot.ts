/**
 * The files `initdb` writes for a new PGlite cluster, saved once per machine and PGlite build,
 * so an in-memory database starts from them instead of running initdb again. A fresh start
 * costs ~7 s of CPU (initdb in WASM), one from the saved files ~2 s; the suite opens an
 * in-memory PGlite hundreds of times, each test file in its own process, so the files are
 * kept on disk (the OS temp directory), not in memory. The cluster started either way is
 * the same: the snapshot is taken right after initdb, before any session setting or
 * statement. A new data directory (no PG_VERSION in it yet) starts from it too: PGlite
 * writes the files into the directory, which then resumes like any other; a directory
 * that holds a cluster is never touched by it.
 *
 * @example
 * const snapshot = await readInitdbSnapshot(); // undefined the first time on this machine
 * const pglite = new PGlite({ dataDir: "memory://", loadDataDir: snapshot });
 * await pglite.waitReady;
 * if (snapshot === undefined) await saveInitdbSnapshot(pglite);
 */
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite } from "@electric-sql/pglite";

/** Where the snapshot lives; `CASEBOOK_PGLITE_SNAPSHOT_DIR=off` turns the snapshot off. */
function snapshotPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = env.CASEBOOK_PGLITE_SNAPSHOT_DIR ?? join(tmpdir(), "casebook-pglite-initdb");
  if (dir === "off") return undefined;
  // Keyed by the PGlite build: a new version's initdb (or its catalog) never meets an old snapshot.
  const wasm = statSync(fileURLToPath(import.meta.resolve("@electric-sql/pglite/initdb.wasm")));
  const pg = statSync(fileURLToPath(import.meta.resolve("@electric-sql/pglite/pglite.wasm")));
  return join(
    dir,
    `initdb-${wasm.size}-${Math.trunc(wasm.mtimeMs)}-${pg.size}-${Math.trunc(pg.mtimeMs)}.tar`,
  );
}

let cached: Promise<Blob | undefined> | undefined;

/** The saved initdb files, or undefined when none is saved yet (or it cannot be read). */
export function readInitdbSnapshot(): Promise<Blob | undefined> {
  cached ??= (async () => {
    const path = snapshotPath();
    if (path === undefined) return undefined;
    try {
      return new Blob([await readFile(path)]);
    } catch {
      return undefined;
    }
  })();
  return cached;
}

/**
 * Saves a just-initdb'ed cluster's files for the next in-memory start. Written under a unique
 * name then renamed, so several test processes racing here leave one whole file. Best effort:
 * a full disk or a read-only temp directory only means the next start runs initdb again.
 */
export async function saveInitdbSnapshot(pglite: PGlite): Promise<void> {
  const path = snapshotPath();
  if (path === undefined) return;
  const partial = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    const dump = await pglite.dumpDataDir("none");
    await mkdir(join(path, ".."), { recursive: true });
    await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
    await rename(partial, path);
    cached = Promise.resolve(new Blob([dump]));
  } catch {
    await rm(partial, { force: true });
  }
}
