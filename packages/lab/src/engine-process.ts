/**
 * One throw-away engine process (Redis, PostgreSQL, …) on a free loopback port,
 * with the faults tests need: pause (SIGSTOP), resume (SIGCONT), kill (SIGKILL),
 * graceful shutdown, and restart on the same port. The spawners build on it; it
 * knows nothing of any engine beyond the `EngineLaunch` it is given.
 *
 * The engine runs in its own process group, and every signal goes to its whole
 * process tree, so forked children (PostgreSQL's backends) pause and die with it.
 *
 * @example
 * const engine = await EngineProcess.start({
 *   name: "redis", command: "/usr/bin/redis-server", args: (port) => ["--port", String(port)],
 *   cwd: dir, tempDir: dir, isReady: (port) => ping(port), requestStop: async (_, child) => void child.kill("SIGTERM"),
 * });
 * engine.pause(); engine.resume(); await engine.kill(); await engine.restart();
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { type Guard, guardProcessTree } from "./child-reaper.ts";
import { freePort } from "./free-port.ts";
import { labErrors } from "./lab-errors.ts";
import { signalTree } from "./process-tree.ts";

export interface EngineLaunch {
  /** Name used in messages: "redis", "postgres". */
  name: string;
  /** Absolute path of the server program. */
  command: string;
  args: (port: number) => string[];
  cwd: string;
  /** The engine's own temp dir: the reaper removes it if this process dies first. */
  tempDir: string;
  /** Run as this user and group (PostgreSQL refuses to run as root). */
  uid?: number;
  gid?: number;
  env?: NodeJS.ProcessEnv;
  /**
   * True once THIS engine answers a real request (PING, a query); must settle within `pollMs`-ish.
   * "This" matters: when two spawns race for one free port, the loser's probe on that port
   * reaches the winner, so a probe must check the answer comes from `pid` (or reach the
   * engine by a path only it owns, such as a socket in its own directory).
   */
  isReady: (port: number, pid: number) => Promise<boolean>;
  /** Asks for a graceful stop; the group is SIGKILLed if it has not exited after `stopTimeoutMs`. */
  requestStop: (port: number, child: ChildProcess) => Promise<void>;
}

export interface EngineTimeouts {
  /** How long start and restart wait for `isReady` (crash recovery counts). Default 20 000 ms. */
  readyTimeoutMs?: number;
  /** How long a graceful stop may take before SIGKILL. Default 5 000 ms. */
  stopTimeoutMs?: number;
  /** Pause between readiness probes. Default 25 ms. */
  pollMs?: number;
  /** Fresh ports tried when another process wins the race for one. Default 5. */
  maxPortAttempts?: number;
  /** Bytes of engine output kept for error messages. Default 64 KiB. */
  maxLogBytes?: number;
  /** Where ports come from. Default: a free loopback port each attempt (tests force a port race with it). */
  pickPort?: () => Promise<number>;
}

export type EngineState = "running" | "paused" | "exited";

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

interface Running {
  child: ChildProcess;
  pgid: number;
  guard: Guard;
  exited: Promise<ExitInfo>;
  exit?: ExitInfo;
  /** This run's own output tail: "address in use" from an earlier run must not count. */
  output: string;
}

const ADDRESS_IN_USE = /address already in use/i;
/** After `exit`, how long to wait for the output pipes to drain (`close`), so the log is complete. */
const OUTPUT_DRAIN_MS = 250;

const DEFAULTS: Required<EngineTimeouts> = {
  readyTimeoutMs: 20_000,
  stopTimeoutMs: 5_000,
  pollMs: 25,
  maxPortAttempts: 5,
  maxLogBytes: 64 * 1024,
  pickPort: () => freePort(),
};

/** Resolves after `ms`, or earlier when `early` settles: a bounded wait that still wakes on the event. */
function waitAtMost<T>(ms: number, early: Promise<T>): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    // `early` is a child's `exited`, which never rejects: nothing to catch.
    void early.then((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

/** Settles once the child has exited (or failed to spawn) and its output has drained. */
function exitOf(child: ChildProcess, onExit: () => void): Promise<ExitInfo> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (info: ExitInfo) => {
      if (settled) return;
      settled = true;
      onExit();
      resolve(info);
    };
    // Only a spawn failure (no pid) ends the process; other errors (a failed kill) do not.
    child.on("error", (error) => {
      if (child.pid === undefined) settle({ code: null, signal: null, error });
    });
    child.once("exit", (code, signal) => {
      // Forked children may hold the pipes open; the drain wait is bounded, not tied to them.
      const timer = setTimeout(() => settle({ code, signal }), OUTPUT_DRAIN_MS);
      child.once("close", () => {
        clearTimeout(timer);
        settle({ code, signal });
      });
    });
  });
}

export class EngineProcess {
  readonly port: number;
  readonly #launch: EngineLaunch;
  readonly #options: Required<EngineTimeouts>;
  #running: Running | undefined;
  #paused = false;
  #log = "";

  private constructor(launch: EngineLaunch, options: Required<EngineTimeouts>, port: number) {
    this.#launch = launch;
    this.#options = options;
    this.port = port;
  }

  /** Starts the engine on a free port, retrying with a fresh port when the port was taken meanwhile. */
  static async start(launch: EngineLaunch, timeouts: EngineTimeouts = {}): Promise<EngineProcess> {
    const options = { ...DEFAULTS };
    // Only the known keys: callers pass their whole options object (spawnRedis's has `args`).
    for (const key of Object.keys(DEFAULTS) as Array<keyof EngineTimeouts>) {
      const value = timeouts[key];
      if (value !== undefined) (options as Record<string, unknown>)[key] = value;
    }
    for (let attempt = 1; ; attempt++) {
      const port = await options.pickPort();
      const engine = new EngineProcess(launch, options, port);
      engine.#running = engine.#spawn();
      const outcome = await engine.#awaitReady();
      if (outcome === "ready") return engine;
      if (outcome === "port-taken" && attempt < options.maxPortAttempts) continue;
      throw engine.#startError(outcome, attempt);
    }
  }

  get state(): EngineState {
    if (!this.#running || this.#running.exit) return "exited";
    return this.#paused ? "paused" : "running";
  }

  /** The engine's process id (the group leader), while it runs. */
  get pid(): number | undefined {
    return this.state === "exited" ? undefined : this.#running?.pgid;
  }

  /** The last `maxLogBytes` of the engine's stdout and stderr, across restarts. */
  log(): string {
    return this.#log;
  }

  /** SIGSTOP the whole tree: connections stay open, nothing answers. */
  pause(): void {
    const running = this.#requireRunning("pause");
    signalTree(running.pgid, "SIGSTOP");
    this.#paused = true;
  }

  /** SIGCONT the whole tree: everything that queued while paused is answered. */
  resume(): void {
    const running = this.#requireRunning("resume");
    signalTree(running.pgid, "SIGCONT");
    this.#paused = false;
  }

  /** SIGKILL the whole tree, as a crash would, and wait until it is gone. The data dir stays for restart(). */
  async kill(): Promise<void> {
    const running = this.#running;
    if (!running || running.exit) return;
    signalTree(running.pgid, "SIGKILL");
    await this.#awaitExit(running);
  }

  /** Graceful stop (the engine's own shutdown), SIGKILL after `stopTimeoutMs`. Idempotent. */
  async shutdown(): Promise<void> {
    const running = this.#running;
    if (!running || running.exit) return;
    if (this.#paused) this.resume();
    try {
      await this.#launch.requestStop(this.port, running.child);
    } catch {
      // The engine may close the connection before answering SHUTDOWN; the wait below decides.
    }
    const exit = await waitAtMost(this.#options.stopTimeoutMs, running.exited);
    if (!exit) await this.kill();
  }

  /** Starts the engine again on the SAME port, with the same files (after kill(), a crash restart). */
  async restart(): Promise<void> {
    await this.shutdown();
    this.#running = this.#spawn();
    const outcome = await this.#awaitReady();
    if (outcome === "ready") return;
    if (outcome === "port-taken") {
      throw labErrors.create("LAB_ENGINE_PORT_TAKEN", {
        detail: `${this.#launch.name} cannot restart: port ${this.port} was taken by another process`,
        fields: { engine: this.#launch.name, port: this.port, log: this.#log },
      });
    }
    throw this.#startError(outcome, 1);
  }

  #requireRunning(action: string): Running {
    const running = this.#running;
    if (!running || running.exit) {
      throw labErrors.create("LAB_ENGINE_NOT_RUNNING", {
        detail: `cannot ${action} ${this.#launch.name}: it is not running; restart() it first`,
        fields: { engine: this.#launch.name, port: this.port },
      });
    }
    return running;
  }

  #appendLog(running: Running, chunk: Buffer): void {
    const max = this.#options.maxLogBytes;
    const text = chunk.toString("utf8");
    this.#log = (this.#log + text).slice(-max);
    running.output = (running.output + text).slice(-max);
  }

  #spawn(): Running {
    const launch = this.#launch;
    this.#paused = false;
    const child = spawn(launch.command, launch.args(this.port), {
      cwd: launch.cwd,
      env: launch.env ?? process.env,
      detached: true, // its own process group: signals reach forked children too
      stdio: ["ignore", "pipe", "pipe"],
      ...(launch.uid === undefined ? {} : { uid: launch.uid }),
      ...(launch.gid === undefined ? {} : { gid: launch.gid }),
    });
    // Neither the child nor its pipes keep the test process alive; the reaper kills it on exit.
    child.unref();
    (child.stdout as unknown as Socket | null)?.unref();
    (child.stderr as unknown as Socket | null)?.unref();
    const pgid = child.pid ?? -1;
    const guard: Guard = pgid > 0 ? guardProcessTree(pgid, launch.tempDir) : { release: () => {} };
    const running: Running = {
      child,
      pgid,
      guard,
      exited: Promise.resolve({ code: null, signal: null }),
      output: "",
    };
    child.stdout?.on("data", (chunk: Buffer) => this.#appendLog(running, chunk));
    child.stderr?.on("data", (chunk: Buffer) => this.#appendLog(running, chunk));
    running.exited = exitOf(child, () => guard.release()).then((info) => {
      running.exit = info;
      return info;
    });
    return running;
  }

  async #awaitReady(): Promise<"ready" | "port-taken" | "exited" | "timeout"> {
    const running = this.#running!;
    if (running.pgid <= 0) {
      await running.exited; // no pid: the spawn itself failed (ENOENT, EACCES); 'error' carries why
      return "exited";
    }
    const deadline = performance.now() + this.#options.readyTimeoutMs;
    while (performance.now() < deadline) {
      if (running.exit) return ADDRESS_IN_USE.test(running.output) ? "port-taken" : "exited";
      if (await this.#launch.isReady(this.port, running.pgid)) return "ready";
      await waitAtMost(this.#options.pollMs, running.exited);
    }
    await this.kill();
    return "timeout";
  }

  async #awaitExit(running: Running): Promise<void> {
    const exit = await waitAtMost(this.#options.stopTimeoutMs, running.exited);
    if (!exit) {
      throw labErrors.create("LAB_ENGINE_NOT_RUNNING", {
        detail: `${this.#launch.name} (pid ${running.pgid}) did not exit within ${this.#options.stopTimeoutMs} ms of SIGKILL`,
        fields: { engine: this.#launch.name, port: this.port },
      });
    }
  }

  #startError(outcome: "port-taken" | "exited" | "timeout", attempts: number) {
    const name = this.#launch.name;
    const output = this.#running?.output ?? "";
    const fields = { engine: name, port: this.port, attempts, log: output.slice(-4_000) };
    if (outcome === "timeout") {
      return labErrors.create("LAB_ENGINE_NOT_READY", {
        detail: `${name} did not answer on port ${this.port} within ${this.#options.readyTimeoutMs} ms`,
        fields,
      });
    }
    if (outcome === "port-taken") {
      return labErrors.create("LAB_ENGINE_PORT_TAKEN", {
        detail: `${name} found its port taken ${attempts} times in a row`,
        fields,
      });
    }
    const exit = this.#running?.exit;
    const why = exit?.error ? exit.error.message : `code ${exit?.code}, signal ${exit?.signal}`;
    return labErrors.create("LAB_ENGINE_START_FAILED", {
      detail: `${name} exited while starting (${why}); its output ends with:\n${output.slice(-2_000)}`,
      fields,
      cause: exit?.error,
    });
  }
}

/** What a spawner hands to a test: the engine's address and its faults. */
export interface SpawnedEngine {
  /** The engine's connection URL, e.g. `redis://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  readonly pid: number | undefined;
  readonly state: EngineState;
  /** SIGSTOP the engine's process group: connections stay open, nothing answers. */
  pause(): void;
  /** SIGCONT: what queued while paused is answered. */
  resume(): void;
  /** SIGKILL, as a crash: new connections are refused until restart(). Files stay. */
  kill(): Promise<void>;
  /** Starts again on the same port with the same files (graceful shutdown first when running). */
  restart(): Promise<void>;
  /** Final: graceful shutdown, SIGKILL when that is not enough, temp dir removed. Idempotent. */
  stop(): Promise<void>;
  /** The end of the engine's output, for failure messages. */
  log(): string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Wraps an engine as the handle tests use; `cleanup` runs once, after the final stop. */
export function spawnedEngine(
  engine: EngineProcess,
  url: string,
  cleanup: () => Promise<void>,
): SpawnedEngine {
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      await engine.shutdown();
    } finally {
      await cleanup();
    }
  };
  return {
    url,
    port: engine.port,
    get pid() {
      return engine.pid;
    },
    get state() {
      return engine.state;
    },
    pause: () => engine.pause(),
    resume: () => engine.resume(),
    kill: () => engine.kill(),
    restart: async () => {
      if (stopped) {
        throw labErrors.create("LAB_ENGINE_NOT_RUNNING", {
          detail: `cannot restart the engine on port ${engine.port}: stop() is final, spawn a new one`,
          fields: { port: engine.port },
        });
      }
      await engine.restart();
    },
    stop,
    log: () => engine.log(),
    [Symbol.asyncDispose]: stop,
  };
}
