/**
 * A throw-away PostgreSQL cluster for tests that must hurt the engine: `initdb`
 * into its own temp dir, `postgres` on a free loopback port with fsync off, and
 * handles to pause, kill (crash) and restart it (crash recovery on the same files).
 *
 * initdb and postgres refuse to run as root, so as root both run as the `postgres`
 * OS user and the temp dir is handed to it.
 *
 * @example
 * const pg = await spawnPostgres();
 * const client = new pg.Client({ connectionString: pg.url, query_timeout: 500 });
 * pg.pause();             // queries time out (backends are stopped too)
 * pg.resume();
 * await pg.kill();        // connections are refused
 * await pg.restart();     // crash recovery, committed rows are back
 * await pg.stop();        // final: process gone, temp dir removed
 */
import { execFile, spawn } from "node:child_process";
import { chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trackTempDir } from "./child-reaper.ts";
import { EngineProcess, type EngineTimeouts, type SpawnedEngine, spawnedEngine } from "./engine-process.ts";
import { findPostgresBinDir } from "./executables.ts";
import { labErrors } from "./lab-errors.ts";

export interface SpawnPostgresOptions extends EngineTimeouts {
  /** Extra server settings, passed as `-c name=value`, e.g. `{ max_connections: "20" }`. */
  settings?: Record<string, string>;
  /** The dir holding initdb and postgres. Default: $CASEBOOK_PG_BIN or the newest /usr/lib/postgresql/<major>/bin. */
  binDir?: string;
  /** Bound on initdb's run. Default 60 000 ms. */
  initTimeoutMs?: number;
  /** Bound on one readiness probe (pg_isready). Default 2 000 ms. */
  probeTimeoutMs?: number;
}

/** A private PostgreSQL cluster: `url` is `postgres://postgres@127.0.0.1:<port>/postgres`. */
export type SpawnedPostgres = SpawnedEngine;

interface OsUser {
  uid: number;
  gid: number;
}

function run(command: string, args: string[], timeoutMs: number): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      resolve({ ok: !error, output: `${stdout}${stderr}` });
    });
  });
}

/** The `postgres` OS user when we are root (initdb will not run as root), else undefined: run as ourselves. */
async function serverUser(): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = await Promise.all([
    run("id", ["-u", "postgres"], 5_000),
    run("id", ["-g", "postgres"], 5_000),
  ]);
  if (!uid.ok || !gid.ok) {
    throw labErrors.create("LAB_ENGINE_MISSING", {
      detail:
        "PostgreSQL refuses to run as root and there is no `postgres` OS user; install postgresql (apt-get install -y postgresql) or run the tests as a normal user",
      fields: { program: "initdb", package: "postgresql" },
    });
  }
  return { uid: Number(uid.output.trim()), gid: Number(gid.output.trim()) };
}

function resolveBinDir(options: SpawnPostgresOptions): string {
  const binDir = options.binDir ?? process.env.CASEBOOK_PG_BIN ?? findPostgresBinDir();
  if (binDir) return binDir;
  throw labErrors.create("LAB_ENGINE_MISSING", {
    detail:
      "no PostgreSQL server found under /usr/lib/postgresql/<major>/bin; install it with: apt-get install -y postgresql (or set CASEBOOK_PG_BIN)",
    fields: { program: "initdb", package: "postgresql" },
  });
}

/** initdb as `user`: trust auth, superuser `postgres`, C locale, no fsync (a throw-away cluster). */
function initdb(binDir: string, dataDir: string, cwd: string, user: OsUser | undefined, timeoutMs: number) {
  const args = ["-D", dataDir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"];
  return new Promise<void>((resolve, reject) => {
    const child = spawn(join(binDir, "initdb"), args, {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: timeoutMs,
      ...(user ?? {}),
    });
    let output = "";
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8_000);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.once("error", (error) =>
      reject(initdbError(`could not run initdb: ${error.message}`, output, error)),
    );
    child.once("close", (code, signal) => {
      if (code === 0) return resolve();
      reject(initdbError(`initdb failed (code ${code}, signal ${signal})`, output));
    });
  });
}

function initdbError(what: string, output: string, cause?: unknown) {
  return labErrors.create("LAB_ENGINE_START_FAILED", {
    detail: `${what}; its output ends with:\n${output.slice(-2_000)}`,
    fields: { engine: "postgres", log: output },
    cause,
  });
}

/** Makes a temp dir that the server's OS user owns, with the data dir and socket dir inside. */
async function makeClusterDir(user: OsUser | undefined): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-pg-"));
  if (user) await chown(dir, user.uid, user.gid);
  await mkdir(join(dir, "run"), { mode: 0o700 });
  if (user) await chown(join(dir, "run"), user.uid, user.gid);
  return dir;
}

/** Starts a private PostgreSQL cluster on a free loopback port and waits until it accepts connections. */
export async function spawnPostgres(options: SpawnPostgresOptions = {}): Promise<SpawnedPostgres> {
  const binDir = resolveBinDir(options);
  const user = await serverUser();
  const dir = await makeClusterDir(user);
  const untrack = trackTempDir(dir);
  const removeDir = async () => {
    await rm(dir, { recursive: true, force: true });
    untrack();
  };
  const dataDir = join(dir, "data");
  const socketDir = join(dir, "run");
  const settings = { listen_addresses: "127.0.0.1", fsync: "off", ...options.settings };
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
  const probeTimeoutS = String(Math.max(1, Math.ceil(probeTimeoutMs / 1_000)));
  let engine: EngineProcess;
  try {
    await initdb(binDir, dataDir, dir, user, options.initTimeoutMs ?? 60_000);
    engine = await EngineProcess.start(
      {
        name: "postgres",
        command: join(binDir, "postgres"),
        cwd: dir,
        tempDir: dir,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
        ...(user ?? {}),
        args: (port) => [
          ...["-D", dataDir, "-p", String(port), "-k", socketDir],
          ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
        ],
        isReady: async (port) => {
          const pgIsReady = join(binDir, "pg_isready");
          const args = [
            // Through the socket in this engine's own directory: on a lost port race the TCP
            // port would answer for another server.
            "-h",
            socketDir,
            "-p",
            String(port),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-t",
            probeTimeoutS,
          ];
          return (await run(pgIsReady, args, probeTimeoutMs + 1_000)).ok;
        },
        // SIGINT is PostgreSQL's "fast shutdown": roll back open transactions, checkpoint, exit.
        requestStop: async (_port, child) => void child.kill("SIGINT"),
      },
      options,
    );
  } catch (error) {
    await removeDir();
    throw error;
  }
  return spawnedEngine(engine, `postgres://postgres@127.0.0.1:${engine.port}/postgres`, removeDir);
}
