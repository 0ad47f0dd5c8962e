/**
 * One system running as a child process: Node 24 (`process.execPath`) on the
 * system's entry, its output split into lines for the caller, the last stderr
 * lines kept for the post-mortem, and a bounded stop (SIGTERM, wait, SIGKILL).
 *
 * The child gets its own process group, so a Ctrl-C on the terminal reaches only
 * the CLI, which then stops every child in order; a SIGKILL after the grace time
 * goes to the whole group, so workers the system spawned go with it.
 *
 * @example
 * const child = SystemProcess.start({ name: "alpha", entry: "/repo/systems/alpha/src/main.ts", args: [],
 *   cwd: "/repo/systems/alpha", env: process.env, onLine: (stream, line) => console.log(line),
 *   stderrTailLines: 30, maxLineChars: 16_384 });
 * await child.stop(10_000); // "exited" | "killed" | "not-running"
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { LineSplitter } from "./line-splitter.ts";

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all. */
  error?: Error;
}

export interface SystemProcessOptions {
  name: string;
  entry: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  onLine(stream: "stdout" | "stderr", line: string): void;
  /** How many stderr lines to keep for the report when the child dies. */
  stderrTailLines: number;
  maxLineChars: number;
}

export type StopOutcome = "exited" | "killed" | "not-running";

/** After exit, how long to wait for the pipes to drain; a grandchild holding them open must not hang us. */
const flushGraceMs = 1_000;
/** After SIGKILL, how long to wait for the exit to be reported. */
const killWaitMs = 5_000;

export class SystemProcess {
  readonly name: string;
  readonly exited: Promise<ExitInfo>;
  readonly #child: ChildProcess;
  readonly #tail: string[] = [];
  readonly #tailLines: number;
  #exit: ExitInfo | undefined;

  private constructor(options: SystemProcessOptions) {
    this.name = options.name;
    this.#tailLines = options.stderrTailLines;
    this.#child = spawn(process.execPath, [options.entry, ...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    this.#pipe("stdout", options);
    this.#pipe("stderr", options);
    this.exited = new Promise((resolve) => {
      const finish = (info: ExitInfo) => {
        this.#exit ??= info;
        resolve(this.#exit);
      };
      this.#child.once("error", (error) => finish({ code: null, signal: null, error }));
      this.#child.once("exit", (code, signal) => {
        this.#exit ??= { code, signal };
        setTimeout(() => finish({ code, signal }), flushGraceMs).unref();
      });
      this.#child.once("close", (code: number | null, signal: NodeJS.Signals | null) =>
        finish({ code, signal }),
      );
    });
  }

  static start(options: SystemProcessOptions): SystemProcess {
    return new SystemProcess(options);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#exit === undefined && this.#child.pid !== undefined;
  }

  /** The last stderr lines, oldest first. */
  stderrTail(): string[] {
    return [...this.#tail];
  }

  /** SIGTERM, then SIGKILL to the process group when it has not exited within `stopTimeoutMs`. */
  async stop(stopTimeoutMs: number): Promise<StopOutcome> {
    if (!this.running) return "not-running";
    this.#child.kill("SIGTERM");
    const outcome = await Promise.race([
      this.exited.then(() => "exited" as const),
      sleep(stopTimeoutMs, "timeout" as const, { ref: false }),
    ]);
    if (outcome === "exited") return "exited";
    this.killNow();
    // An unref'd timer: a pending bound must not itself keep the CLI alive once the child is gone.
    await Promise.race([this.exited, sleep(killWaitMs, undefined, { ref: false })]);
    return "killed";
  }

  /** SIGKILL to the child's process group, synchronously: also the last resort when the CLI itself exits. */
  killNow(): void {
    const pid = this.#child.pid;
    if (pid === undefined || this.#exit !== undefined) return;
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // The group is already gone (ESRCH): nothing left to kill.
    }
  }

  #pipe(stream: "stdout" | "stderr", options: SystemProcessOptions): void {
    const source = this.#child[stream];
    if (source === null) return;
    source.setEncoding("utf8");
    const splitter = new LineSplitter(options.maxLineChars, (line) => {
      if (stream === "stderr") {
        this.#tail.push(line);
        if (this.#tail.length > this.#tailLines) this.#tail.shift();
      }
      options.onLine(stream, line);
    });
    source.on("data", (chunk: string) => splitter.push(chunk));
    source.on("end", () => splitter.end());
  }
}
