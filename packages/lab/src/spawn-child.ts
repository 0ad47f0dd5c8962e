/**
 * A test's child process (a worker, a racing client, a service under test) started the way
 * every test needs it: Node running `file` with `args` and `env`, a ready-line handshake
 * on stdout with a bounded wait, its stderr kept (and echoed) so a failure says why the
 * child died, and killed with the test — by `t.after` when a test context is given, and by
 * lab's reaper (exit hook + watchdog) if the test process itself dies.
 *
 * The child speaks lines: it prints a ready line when it can take work, then one line per
 * answer; the test writes commands to its stdin with `send`. A child that speaks Node's IPC
 * instead (`process.send`, structured messages) is started with `ipc: true` and answered
 * with `sendMessage` / `nextMessage`; its ready handshake is then a message too (`ready`
 * given a predicate over messages), since such a child prints nothing on stdout.
 *
 * stdin is a pipe (for `send`). A child that takes no input but opens PGlite must have it
 * ended (`child.process.stdin.end()`): PGlite's stdin device reads fd 0 with a blocking
 * readSync, which an open, silent pipe holds forever (stdin "ignore" gave EOF at once).
 *
 * @example
 * const worker = await spawnChild(new URL("./worker-child.ts", import.meta.url), {
 *   args: [databaseUrl, "owner-a"], ready: "ready", test: t,
 * });
 * worker.send("go");
 * assert.equal(await worker.nextLine(), "done");
 * await worker.stop({ line: "stop" });   // asks, then SIGKILL after `stopTimeoutMs`
 */

import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { childNodeFlags } from "./child-node-flags.ts";
import { guardProcessTree } from "./child-reaper.ts";
import { labErrors } from "./lab-errors.ts";

export interface SpawnChildOptions {
  /** The child's arguments: `process.argv.slice(2)` in a file, `slice(1)` in `{ code }`. */
  args?: readonly string[];
  /** The child's environment. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Arguments for Node itself, before the file (`--expose-gc`). */
  nodeArgs?: readonly string[];
  /**
   * Which stdout line means ready: exact text, a pattern, or a predicate. Default: the
   * first line, whatever it says. `false`: do not wait.
   */
  ready?: string | RegExp | ((line: string) => boolean) | ReadyMessage | false;
  /** Bound on the wait for the ready line (start-up on a loaded 2-core machine). Default 20 000 ms. */
  readyTimeoutMs?: number;
  /** Bound on each `nextLine` unless it is given one. Default 30 000 ms. */
  lineTimeoutMs?: number;
  /** Bound on a graceful `stop` before SIGKILL. Default 5 000 ms. */
  stopTimeoutMs?: number;
  /** Also write the child's stderr to ours, as `stdio: "inherit"` did. Default true. */
  echoStderr?: boolean;
  /** Bytes of stderr kept for failure messages. Default 16 KiB. */
  maxStderrBytes?: number;
  /** Called for every stdout line from the first (the ready line included), before `nextLine` takes it. */
  onLine?: (line: string) => void;
  /**
   * `false`: stdout lines go only to `onLine` listeners and are not kept for `nextLine` — for
   * a service that logs more than a test reads (its log would otherwise pile up here).
   * Needs `ready: false` or a ready message. Default true.
   */
  queueLines?: boolean;
  /** The test: the child is SIGKILLed in its `after` hook. */
  test?: { after(fn: () => unknown): void };
  /**
   * Open Node's IPC channel (`process.send` / `process.on("message")` in the child). With it,
   * `ready` may be `{ message: predicate }`: wait for the first message it accepts instead of a line.
   */
  ipc?: boolean;
}

/** With `ipc: true`, the ready handshake may be a message: the first one `message` accepts. */
export interface ReadyMessage {
  message: (message: unknown) => boolean;
}

export type ChildProcessWithPipes = ChildProcessByStdio<Writable, Readable, Readable>;

export interface SpawnedChild {
  /** The Node child process (stdin and stdout piped). */
  readonly process: ChildProcessWithPipes;
  readonly pid: number;
  /** The line that said ready ("" with `ready: false`). */
  readonly readyLine: string;
  /** Settles once the child has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The next stdout line not yet taken; rejects when the child exits or stays silent for `timeoutMs`. */
  nextLine(timeoutMs?: number): Promise<string>;
  /** Calls `listener` for every stdout line from now on (lines taken by `nextLine` included). */
  onLine(listener: (line: string) => void): void;
  /** Writes `line` and a newline to the child's stdin. */
  send(line: string): void;
  /** The ready message (`ready: { message }`), else undefined. */
  readonly readyMessage: unknown;
  /**
   * With `ipc`: the next IPC message `accept` takes (default any) not yet taken; messages it
   * skips stay for later calls. Rejects when the child exits or sends none within `timeoutMs`.
   */
  nextMessage<T = unknown>(accept?: (message: unknown) => boolean, timeoutMs?: number): Promise<T>;
  /** With `ipc`: sends `message` over the channel; resolves once it is written. */
  sendMessage(message: unknown): Promise<void>;
  /** The end of the child's stderr so far. */
  stderr(): string;
  /** SIGKILL (or `signal`) and wait for the exit. Idempotent. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Asks the child to stop (`line` on stdin, else SIGTERM), SIGKILL after `stopTimeoutMs`. */
  stop(options?: { line?: string }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

function matcher(ready: SpawnChildOptions["ready"]): ((line: string) => boolean) | undefined {
  if (ready === false || (typeof ready === "object" && "message" in ready)) return undefined;
  if (ready === undefined) return () => true;
  if (typeof ready === "string") return (line) => line === ready;
  if (ready instanceof RegExp) return (line) => ready.test(line);
  return ready;
}

/**
 * Starts `file` (a path, a file: URL, or `{ code }`: an ES module body run with `-e`) under this Node; resolves once it printed its ready
 * line. Rejects with LAB_CHILD_FAILED — naming the file, and ending with its stderr — when
 * it exits or stays silent first; the child is killed then.
 *
 * @example
 * const child = await spawnChild("/abs/path/child.ts", { args: ["a"], test: t });
 */
export async function spawnChild(
  file: string | URL | { readonly code: string },
  options: SpawnChildOptions = {},
): Promise<SpawnedChild> {
  if (options.queueLines === false && matcher(options.ready) !== undefined)
    throw new TypeError("spawnChild: a ready line needs queueLines (use ready: false or a ready message)");
  const inline = typeof file === "object" && "code" in file;
  const path = inline ? "(inline module)" : typeof file === "string" ? file : fileURLToPath(file);
  const entry = inline ? ["--input-type=module", "-e", file.code] : [path];
  const maxStderr = options.maxStderrBytes ?? 16 * 1024;
  const lineTimeoutMs = options.lineTimeoutMs ?? 30_000;
  const nodeArgs = [...childNodeFlags(), ...(options.nodeArgs ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, ...entry, ...(options.args ?? [])], {
    env: options.env ?? process.env,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdio: options.ipc ? ["pipe", "pipe", "pipe", "ipc"] : ["pipe", "pipe", "pipe"],
  }) as ChildProcessWithPipes;
  const guard = child.pid === undefined ? { release: () => {} } : guardProcessTree(child.pid);
  let stderrText = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderrText = (stderrText + chunk.toString("utf8")).slice(-maxStderr);
    if (options.echoStderr ?? true) process.stderr.write(chunk);
  });
  // The child may exit before reading what we send; that is its exit to report, not an EPIPE crash.
  child.stdin.on("error", () => {});
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("error", (error) => {
      spawnError = error;
      if (child.pid === undefined) {
        exitInfo = { code: null, signal: null };
        resolve(exitInfo);
      }
    });
    child.once("close", (code, signal) => {
      guard.release();
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });

  const queue: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  const listeners: Array<(line: string) => void> = options.onLine ? [options.onLine] : [];
  let partial = "";
  child.stdout.on("data", (chunk: Buffer) => {
    partial += chunk.toString("utf8");
    let end = partial.indexOf("\n");
    while (end >= 0) {
      const line = partial.slice(0, end).replace(/\r$/, "");
      partial = partial.slice(end + 1);
      for (const listener of listeners) listener(line);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else if (options.queueLines !== false) queue.push(line);
      end = partial.indexOf("\n");
    }
  });

  // IPC messages, kept in arrival order until a `nextMessage` accepts them.
  const messages: unknown[] = [];
  const messageWaiters = new Set<() => void>();
  if (options.ipc) {
    child.on("message", (message: unknown) => {
      messages.push(message);
      for (const wake of [...messageWaiters]) wake();
    });
  }

  const failure = (why: string) =>
    labErrors.create("LAB_CHILD_FAILED", {
      detail: `child ${path} (pid ${child.pid ?? "-"}) ${why}${spawnError ? ` (${spawnError.message})` : ""}; stderr ends with:\n${stderrText.slice(-4_000)}`,
      fields: { file: path, pid: child.pid, code: exitInfo?.code, signal: exitInfo?.signal },
      ...(spawnError ? { cause: spawnError } : {}),
    });

  const nextLine = (timeoutMs = lineTimeoutMs): Promise<string> => {
    const queued = queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      let settled = false;
      const take = (line: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(line);
      };
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        waiters.splice(waiters.indexOf(take), 1);
        reject(failure(`printed no line within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.push(take);
      // `exited` never rejects (it resolves on the child's exit event): nothing to catch.
      void exited.then(() => {
        // Lines already read are delivered first (the close event follows the last data).
        setImmediate(() => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(take), 1);
          reject(failure(`exited (code ${exitInfo?.code ?? "-"}, signal ${exitInfo?.signal ?? "-"})`));
        });
      });
    });
  };

  const nextMessage = <T>(accept: (message: unknown) => boolean = () => true, timeoutMs = lineTimeoutMs) => {
    if (!options.ipc) return Promise.reject(new TypeError("nextMessage needs spawnChild({ ipc: true })"));
    return new Promise<T>((resolve, reject) => {
      const done = (settle: () => void) => {
        messageWaiters.delete(look);
        clearTimeout(timer);
        settle();
      };
      const look = () => {
        const at = messages.findIndex(accept);
        if (at >= 0) done(() => resolve(messages.splice(at, 1)[0] as T));
      };
      const timer = setTimeout(
        () => done(() => reject(failure(`sent no awaited message within ${timeoutMs} ms`))),
        timeoutMs,
      );
      messageWaiters.add(look);
      look();
      void exited.then(() =>
        // Messages already received are looked at first (the close event follows them).
        setImmediate(() => {
          if (!messageWaiters.has(look)) return;
          look();
          if (messageWaiters.has(look))
            done(() =>
              reject(failure(`exited (code ${exitInfo?.code ?? "-"}, signal ${exitInfo?.signal ?? "-"})`)),
            );
        }),
      );
    });
  };
  const sendMessage = (message: unknown) =>
    new Promise<void>((resolve, reject) => {
      if (!options.ipc) return reject(new TypeError("sendMessage needs spawnChild({ ipc: true })"));
      child.send(message as never, (error: Error | null) => (error ? reject(error) : resolve()));
    });

  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    if (exitInfo) return;
    child.kill(signal);
    await exited;
  };
  const stop = async (stopOptions: { line?: string } = {}) => {
    if (exitInfo) return;
    if (stopOptions.line === undefined) child.kill("SIGTERM");
    else child.stdin.write(`${stopOptions.line}\n`);
    const timer = setTimeout(() => child.kill("SIGKILL"), options.stopTimeoutMs ?? 5_000);
    await exited;
    clearTimeout(timer);
  };
  options.test?.after(() => kill());

  const isReady = matcher(options.ready);
  let readyLine = "";
  let readyMessage: unknown;
  const readyOnMessage =
    typeof options.ready === "object" && "message" in options.ready ? options.ready : undefined;
  if (readyOnMessage) {
    try {
      readyMessage = await nextMessage(readyOnMessage.message, options.readyTimeoutMs ?? 20_000);
    } catch (error) {
      await kill();
      throw error;
    }
  }
  if (isReady) {
    const deadline = performance.now() + (options.readyTimeoutMs ?? 20_000);
    try {
      for (;;) {
        const left = Math.max(0, deadline - performance.now());
        const line = await nextLine(left).catch((error: unknown) => {
          throw labErrors.is(error, "LAB_CHILD_FAILED") && !exitInfo
            ? failure(`printed no ready line within ${options.readyTimeoutMs ?? 20_000} ms`)
            : error;
        });
        if (isReady(line)) {
          readyLine = line;
          break;
        }
      }
    } catch (error) {
      await kill();
      throw error;
    }
  }
  return {
    process: child,
    pid: child.pid ?? -1,
    readyLine,
    readyMessage,
    exited,
    nextLine,
    nextMessage,
    sendMessage,
    onLine: (listener) => {
      listeners.push(listener);
    },
    send: (line) => {
      child.stdin.write(`${line}\n`);
    },
    stderr: () => stderrText,
    kill,
    stop,
    [Symbol.asyncDispose]: () => kill(),
  };
}
