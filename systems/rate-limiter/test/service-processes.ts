/**
 * Runs the rate-limiter SERVICE as real child processes (src/main.ts, as `npm start`
 * would), so concurrency and fault tests exercise what is deployed: several stateless
 * instances sharing one Redis, each with its own connection, breaker and local
 * fallback. Each process listens on port 0 and announces its URL in the
 * "rate-limiter listening" log line; the policies are written to a temp JSON file.
 *
 * Processes never outlive the test: each is lab's spawnChild, guarded by its reaper (SIGKILL
 * of its tree if this process dies), and `stop()` sends SIGTERM, then SIGKILL after a bound.
 *
 * @example
 * const services = await startServiceProcesses({
 *   count: 3,
 *   policies: { policies: [{ name: "burst", key: "user:{user}", limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.001 } }] },
 *   env: { REDIS_URL: url, RATE_LIMITER_KEY_PREFIX: prefix },
 * });
 * const answer = await services.instances[0]!.check({ descriptors: { user: "42" } });
 * await services.stop();
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { eventually } from "@casebook/lab/eventually";
import { type ChildProcessWithPipes, type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";

const systemDir = fileURLToPath(new URL("..", import.meta.url));
const mainPath = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/** One JSON log line of a service process (pino). */
export type LogLine = Readonly<Record<string, unknown>> & { readonly msg?: string };

/** The body of POST /v1/check (see src/api/check-schema.ts). */
export interface CheckRequest {
  readonly descriptors: Partial<Record<"ip" | "apiKey" | "plan" | "user" | "route" | "method", string>>;
  readonly cost?: number;
  readonly policies?: readonly string[];
}

/** The decision POST /v1/check answers with (200 whatever the outcome). */
export interface CheckAnswer {
  readonly allowed: boolean;
  readonly outcome: "allowed" | "limited" | "unavailable";
  readonly remaining: number | null;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  readonly degraded: boolean;
  readonly failMode: "open" | "closed";
  readonly headers: Readonly<Record<string, string>>;
  readonly limits: readonly Readonly<Record<string, unknown>>[];
}

/** POST /v1/check's answer, or the explicit shed of an overloaded instance (503 RATELIMIT_OVERLOADED). */
export type CheckOrShed =
  | { readonly kind: "decision"; readonly answer: CheckAnswer }
  | { readonly kind: "shed"; readonly code: string; readonly retryAfterS: number }
  /** The HTTP edge dropped the request before any route ran: 408 (not read in time) or a reset connection. */
  | { readonly kind: "edge"; readonly code: string };

export interface ServiceProcessOptions {
  /** How many instances to start (they share `env`, hence one Redis and one key prefix). */
  readonly count: number;
  /** The policy config object (what policies.yaml holds), written as JSON for RATE_LIMITER_POLICIES. */
  readonly policies: unknown;
  /** REDIS_URL, RATE_LIMITER_* …; PORT is 0 and HOST 127.0.0.1 unless given; LOG_LEVEL is always info. */
  readonly env: Readonly<Record<string, string>>;
  /** Bound on one process's start (import, Redis connect, listen). Default 20 000 ms. */
  readonly startTimeoutMs?: number;
  /** Bound on a graceful stop before SIGKILL. Default 3 000 ms. */
  readonly stopTimeoutMs?: number;
  /** Bound on one HTTP request to a process. Default 5 000 ms. */
  readonly requestTimeoutMs?: number;
  /** Log lines kept per process (the oldest are dropped). Default 2 000. */
  readonly maxLogLines?: number;
}

export interface ServiceProcess {
  /** `http://127.0.0.1:<port>` from the "rate-limiter listening" line. */
  readonly url: string;
  readonly pid: number;
  /** POST /v1/check; rejects unless the answer is 200. */
  check(body: CheckRequest): Promise<CheckAnswer>;
  /** POST /v1/check; a 503 problem is returned as a shed (its code), any other non-200 rejects. */
  checkOrShed(body: CheckRequest): Promise<CheckOrShed>;
  /** The value of an unlabelled metric in GET /metrics (a gauge such as `ratelimit_degraded`). */
  metric(name: string): Promise<number>;
  /** The JSON log lines written so far (the last `maxLogLines`). */
  logs(): readonly LogLine[];
  /** Resolves with the first line (already written or to come) `match` accepts; rejects after `timeoutMs`. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
}

export interface ServiceProcesses {
  readonly instances: readonly ServiceProcess[];
  /** Stops every process (SIGTERM, SIGKILL after the bound) and removes the policy file. Idempotent. */
  stop(): Promise<void>;
}

interface Waiter {
  match: (line: LogLine) => boolean;
  resolve: (line: LogLine) => void;
  reject: (error: Error) => void;
}

/** A child process running main.ts, with its log lines parsed as they arrive. */
class ServiceChild implements ServiceProcess {
  readonly child: ChildProcessWithPipes;
  readonly pid: number;
  url = "";
  readonly #spawned: SpawnedChild;
  readonly #lines: LogLine[] = [];
  readonly #waiters = new Set<Waiter>();
  readonly #maxLogLines: number;
  readonly #requestTimeoutMs: number;
  #closed = false;
  readonly exited: Promise<void>;

  /** Starts main.ts; its log lines are parsed as they arrive (none kept by lab itself). */
  static async start(
    env: NodeJS.ProcessEnv,
    options: { maxLogLines: number; requestTimeoutMs: number },
  ): Promise<ServiceChild> {
    const spawned = await spawnChild(mainPath, {
      cwd: systemDir,
      env,
      ready: false,
      queueLines: false,
      echoStderr: false,
      // Only the tail matters for a failure message; keep it bounded.
      maxStderrBytes: 8_192,
    });
    spawned.process.stdin.end(); // no input, as stdin "ignore" gave
    return new ServiceChild(spawned, options);
  }

  private constructor(spawned: SpawnedChild, options: { maxLogLines: number; requestTimeoutMs: number }) {
    this.#maxLogLines = options.maxLogLines;
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#spawned = spawned;
    this.child = spawned.process;
    this.pid = spawned.pid;
    this.exited = spawned.exited.then(() => {});
    spawned.onLine((text) => this.#onLine(text));
    // Exited and every output stream drained: no line will come any more.
    this.child.once("close", () => {
      this.#closed = true;
      for (const waiter of this.#waiters) waiter.reject(new Error(`pid ${this.pid} exited:\n${this.tail()}`));
      this.#waiters.clear();
    });
  }

  #onLine(text: string): void {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { msg: text };
    }
    this.#lines.push(line);
    if (this.#lines.length > this.#maxLogLines) this.#lines.shift();
    for (const waiter of this.#waiters) {
      if (waiter.match(line)) {
        this.#waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  }

  logs(): readonly LogLine[] {
    return [...this.#lines];
  }

  /** What the process wrote, for failure messages. */
  tail(): string {
    const out = this.#lines.slice(-20).map((line) => JSON.stringify(line));
    return `${out.join("\n")}\n${this.#spawned.stderr()}`;
  }

  waitForLog(match: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine> {
    const seen = this.#lines.find(match);
    if (seen) return Promise.resolve(seen);
    if (this.#closed) {
      return Promise.reject(new Error(`pid ${this.pid} exited:\n${this.tail()}`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(
          new Error(`no matching log line from pid ${this.pid} within ${timeoutMs} ms:\n${this.tail()}`),
        );
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  async check(body: CheckRequest): Promise<CheckAnswer> {
    const answer = await this.checkOrShed(body);
    if (answer.kind !== "decision") throw new Error(`POST /v1/check was not decided: ${answer.code}`);
    return answer.answer;
  }

  async checkOrShed(body: CheckRequest): Promise<CheckOrShed> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.url}/v1/check`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#requestTimeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (code === "ECONNRESET" || code === "UND_ERR_SOCKET") return { kind: "edge", code };
      throw error;
    }
    if (response.status === 408) return { kind: "edge", code: "REQUEST_TIMEOUT" };
    if (response.status === 200) return { kind: "decision", answer: JSON.parse(text) as CheckAnswer };
    if (response.status === 503) {
      const code = String((JSON.parse(text) as { code?: unknown }).code);
      return { kind: "shed", code, retryAfterS: Number(response.headers.get("retry-after")) };
    }
    throw new Error(`POST /v1/check answered ${response.status}: ${text}`);
  }

  async metric(name: string): Promise<number> {
    const response = await fetch(`${this.url}/metrics`, {
      signal: AbortSignal.timeout(this.#requestTimeoutMs),
    });
    const text = await response.text();
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    if (line === undefined) throw new Error(`metric ${name} not found in /metrics`);
    return Number(line.slice(name.length + 1));
  }

  /** SIGTERM (graceful drain), then SIGKILL when it has not exited within the bound. */
  async stop(stopTimeoutMs: number): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    // The bound's timer is cancelled once the process exits, so it keeps nothing alive.
    const bound = new AbortController();
    const exited = await Promise.race([
      this.exited.then(() => true),
      sleep(stopTimeoutMs, false, { signal: bound.signal }).catch(() => true),
    ]);
    bound.abort();
    if (exited) return;
    await this.#spawned.kill("SIGKILL");
  }
}

/** Starts `count` service processes in parallel and resolves once every one is listening. */
export async function startServiceProcesses(options: ServiceProcessOptions): Promise<ServiceProcesses> {
  if (!(Number.isInteger(options.count) && options.count >= 1 && options.count <= 16)) {
    throw new RangeError(`count must be an integer in [1, 16], got ${options.count}`);
  }
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 3_000;
  const dir = await mkdtemp(join(tmpdir(), "casebook-rl-policies-"));
  const policyPath = join(dir, "policies.json");
  await writeFile(policyPath, JSON.stringify(options.policies));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    RATE_LIMITER_POLICIES: policyPath,
    ...options.env,
    // The URL is announced at info level: a quieter level would leave nothing to wait for.
    LOG_LEVEL: "info",
  };
  const children: ServiceChild[] = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(children.map((child) => child.stop(stopTimeoutMs)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < options.count; i++) {
      children.push(
        await ServiceChild.start(env, {
          maxLogLines: options.maxLogLines ?? 2_000,
          requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
        }),
      );
    }
    await Promise.all(children.map((child) => listening(child, startTimeoutMs)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { instances: children, stop };
}

/** Waits for the "rate-limiter listening" line (waitForLog fails fast when the process exits first). */
async function listening(child: ServiceChild, timeoutMs: number): Promise<void> {
  const line = await child.waitForLog((l) => l.msg === "rate-limiter listening", timeoutMs);
  if (typeof line.url !== "string") throw new Error(`listening line without url: ${JSON.stringify(line)}`);
  child.url = line.url;
}

/**
 * Bounded poll for a state only an external process can change (a Redis reconnect):
 * there is no event to await. Resolves with the first value `probe` accepts.
 *
 * @example
 * const answer = await pollUntil(() => svc.check(body), (a) => !a.degraded, { timeoutMs: 10_000 });
 */
export async function pollUntil<T>(
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  options: { timeoutMs: number; intervalMs?: number },
): Promise<T> {
  const intervalMs = options.intervalMs ?? 50;
  return eventually(probe, {
    timeoutMs: options.timeoutMs,
    intervalMs,
    accept,
    what: "the accepted value",
  }) as Promise<T>;
}
