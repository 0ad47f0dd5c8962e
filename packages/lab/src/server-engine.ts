/**
 * The base of the spawners for HTTP-speaking servers (nginx, Varnish, Prometheus,
 * VictoriaMetrics) and redis-sentinel: the program found or installed from Debian on
 * demand, a temp dir of its own (config, data, logs), a free loopback port with retry,
 * readiness by a real request to a socket THIS process tree listens on, lab's watchdog,
 * and pause/kill/restart/stop from EngineProcess. Debian's postinst may start a system
 * instance of the same server (nginx on :80, prometheus on :9090): it is left alone.
 *
 * @example
 * const server = await spawnServerEngine({
 *   name: "prometheus", program: "prometheus", debianPackage: "prometheus", dirPrefix: "casebook-prometheus-",
 *   args: (port, dir) => [`--web.listen-address=127.0.0.1:${port}`, `--storage.tsdb.path=${dir}/data`],
 *   answers: async (port) => (await httpProbe(port, "/-/ready"))?.status === 200,
 *   url: (port) => `http://127.0.0.1:${port}`,
 * });
 */
import { ownTempDir } from "./child-reaper.ts";
import { EngineProcess, type EngineTimeouts, type SpawnedEngine, spawnedEngine } from "./engine-process.ts";
import { ensureExecutable } from "./executables.ts";
import { labErrors } from "./lab-errors.ts";
import { listensOn } from "./listening-socket.ts";
import { enginesRequired, type SkippableContext } from "./test-engines.ts";

export interface ServerEngineOptions extends EngineTimeouts {
  /** Install the Debian package when the program is missing (root only). Default true. */
  install?: boolean;
}

export interface ServerEngineSpec {
  /** For messages: "nginx". */
  name: string;
  /** The program's name on PATH (or in the sbin dirs). */
  program: string;
  debianPackage: string;
  /** Prefix of the temp dir under the OS temp dir. */
  dirPrefix: string;
  /** Fills the fresh temp dir once (sub-dirs, files that do not name the port). */
  prepare?: (dir: string) => Promise<void>;
  /**
   * The arguments of one start on `port`; may write the files that name the port (it runs
   * again with a fresh port when a port race forces a retry).
   */
  args: (port: number, dir: string) => string[];
  /** True once the server answers a real request on `port` (the port is already known to be ours). */
  answers: (port: number, dir: string) => Promise<boolean>;
  /** The graceful stop. Default SIGTERM. */
  stopSignal?: NodeJS.Signals;
  url: (port: number) => string;
  env?: NodeJS.ProcessEnv;
}

/** A spawned server: the engine's handle, plus its own directory. */
export interface SpawnedServer extends SpawnedEngine {
  /** The server's temp dir (config, data, logs); removed by `stop()`. */
  readonly dir: string;
}

/** Starts the server as the spec says; see the module's example. */
export async function spawnServerEngine(
  spec: ServerEngineSpec,
  options: ServerEngineOptions = {},
): Promise<SpawnedServer> {
  const command = await ensureExecutable(spec.program, {
    debianPackage: spec.debianPackage,
    install: options.install ?? true,
  });
  const { dir, remove: removeDir } = await ownTempDir(spec.dirPrefix);
  let engine: EngineProcess;
  try {
    await spec.prepare?.(dir);
    engine = await EngineProcess.start(
      {
        name: spec.name,
        command,
        cwd: dir,
        tempDir: dir,
        args: (port) => spec.args(port, dir),
        ...(spec.env ? { env: spec.env } : {}),
        // The socket first: on a lost port race the request would reach the winner.
        isReady: async (port, pid) => listensOn(port, pid) && (await spec.answers(port, dir)),
        requestStop: async (_port, child) => void child.kill(spec.stopSignal ?? "SIGTERM"),
      },
      options,
    );
  } catch (error) {
    await removeDir();
    throw error;
  }
  return Object.assign(spawnedEngine(engine, spec.url(engine.port), removeDir), { dir });
}

/**
 * Runs `start`; when the engine is missing (not installed, and not installable here),
 * skips `t` with the reason and resolves undefined — or fails under CASEBOOK_REQUIRE_ENGINES=1.
 *
 * @example
 * const nginx = await spawnOrSkip(t, () => spawnNginx({ http: (port) => `server { listen 127.0.0.1:${port}; }` }));
 * if (!nginx) return;
 */
export async function spawnOrSkip<T>(t: SkippableContext, start: () => Promise<T>): Promise<T | undefined> {
  try {
    return await start();
  } catch (error) {
    const missing = labErrors.is(error, "LAB_ENGINE_MISSING") || labErrors.is(error, "LAB_BROWSER_MISSING");
    if (!missing || enginesRequired) throw error;
    t.skip(error.message);
    return undefined;
  }
}
