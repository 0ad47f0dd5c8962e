/**
 * Where tests find the real engines. Defaults are this machine's PostgreSQL and
 * Redis; `CASEBOOK_TEST_DATABASE_URL` / `CASEBOOK_TEST_REDIS_URL` override them.
 * When an engine is unreachable the test is skipped with the reason, unless
 * `CASEBOOK_REQUIRE_ENGINES=1` (set by CI), where it fails instead.
 *
 * @example
 * const url = await requireRedis(t); // inside test(..., async (t) => { ... })
 * if (!url) return;                  // skipped locally when Redis is down
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { connect } from "node:net";
import { after, before } from "node:test";

export const testDatabaseUrl =
  process.env.CASEBOOK_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const testRedisUrl = process.env.CASEBOOK_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
export const enginesRequired = process.env.CASEBOOK_REQUIRE_ENGINES === "1";

/**
 * CI's closed-engine pass (.ci/run sets `CASEBOOK_CLOSED_ENGINE_PASS=1` and puts every engine
 * URL on a closed port). That pass proves the README's promise that `npm test` passes, with
 * skips, on a machine without the engines: every test that probes an engine must skip, not
 * fail. A test that reaches no engine runs the same with or without them, and the main pass
 * runs it; marked `engineFree` (or an `embedded` contract-suite backend), it skips here.
 */
export const closedEnginePass = process.env.CASEBOOK_CLOSED_ENGINE_PASS === "1";

/** Why an engine-free test skipped in the closed-engine pass. */
export const CLOSED_PASS_SKIP = "closed-engine pass: reaches no engine; the main pass runs it";

const engineFreeScope = new AsyncLocalStorage<string>();

/**
 * Runs `fn` as engine-free work: an engine probe inside it (requirePostgres, requireRedis,
 * requireNats, a suiteEngine's) throws. So the main pass proves every `engineFree` mark true,
 * and skipping those tests in the closed-engine pass hides nothing that pass could catch.
 */
export function runEngineFree<T>(what: string, fn: () => T): T {
  return engineFreeScope.run(what, fn);
}

/** Throws when called inside `runEngineFree` work: called by every engine probe. */
export function assertEngineAllowed(engine: string): void {
  const what = engineFreeScope.getStore();
  if (what !== undefined)
    throw new Error(
      `${what} is marked engine-free (skipped in CI's closed-engine pass) but probes ${engine}`,
    );
}

/**
 * Marks the test that calls it, first thing in its body, as reaching no engine (in a file that
 * also holds engine tests). In the closed-engine pass it skips the test and returns true; in
 * every other run it returns false, and the rest of the test runs with every engine probe
 * forbidden (node:test runs each test body in its own async scope, so the mark ends with it).
 *
 * @example
 * test("the API on PGlite", async (t) => {
 *   if (engineFree(t)) return;
 *   …
 * });
 */
export function engineFree(t: SkippableContext): boolean {
  if (closedEnginePass) {
    t.skip(CLOSED_PASS_SKIP);
    return true;
  }
  engineFreeScope.enterWith("this test");
  return false;
}

/** Minimal context of node:test's TestContext, so suites can pass `t` or a describe-level stand-in. */
export interface SkippableContext {
  skip(message?: string): void;
}

/**
 * Resolves true when a TCP connection to host:port opens. A refusal answers false at once; a
 * connection that neither opens nor fails within `timeoutMs` is tried again with twice the time,
 * up to `attempts` tries: on a loaded 2-core machine a test process's event loop can stall past
 * a second (a PGlite start compiles its WebAssembly synchronously), and a timer that fires before
 * the loop reads the connect event would call a running engine unreachable — which CI, with
 * CASEBOOK_REQUIRE_ENGINES=1, turns into a failure.
 */
export async function tcpReachable(
  host: string,
  port: number,
  timeoutMs = 1_000,
  attempts = 3,
): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const outcome = await tcpConnect(host, port, timeoutMs * 2 ** attempt);
    if (outcome !== "timeout") return outcome === "open";
  }
  return false;
}

function tcpConnect(host: string, port: number, timeoutMs: number): Promise<"open" | "refused" | "timeout"> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (outcome: "open" | "refused" | "timeout") => {
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(timeoutMs, () => done("timeout"));
    socket.once("connect", () => done("open"));
    socket.once("error", () => done("refused"));
  });
}

async function reachable(url: string, defaultPort: number): Promise<boolean> {
  const parsed = new URL(url);
  return tcpReachable(parsed.hostname || "127.0.0.1", Number(parsed.port || defaultPort));
}

async function requireEngine(
  t: SkippableContext,
  name: string,
  url: string,
  defaultPort: number,
): Promise<string | undefined> {
  assertEngineAllowed(name);
  if (await reachable(url, defaultPort)) return url;
  const why = `${name} not reachable at ${url}`;
  if (enginesRequired) throw new Error(`${why} (CASEBOOK_REQUIRE_ENGINES=1 makes this a failure)`);
  t.skip(why);
  return undefined;
}

/** The real PostgreSQL URL, or undefined after skipping `t` when it is down (fails in CI). */
export function requirePostgres(t: SkippableContext): Promise<string | undefined> {
  return requireEngine(t, "PostgreSQL", testDatabaseUrl, 5432);
}

/** The real Redis URL, or undefined after skipping `t` when it is down (fails in CI). */
export function requireRedis(t: SkippableContext): Promise<string | undefined> {
  return requireEngine(t, "Redis", testRedisUrl, 6379);
}

/** A describe block's engine, probed once by its `before`; see `suiteEngine`. */
export interface SuiteEngine {
  /** The engine's URL once the probe found it up; undefined before the probe ran, or when it is down. */
  readonly url: string | undefined;
  /** In a test: the URL, or undefined after skipping `t` with the probe's reason. */
  use(t: SkippableContext): string | undefined;
  /** Registers a `before` hook that runs only when the engine is up. */
  before(fn: (url: string) => Promise<unknown> | unknown): void;
  /** Registers an `after` hook that runs only when the engine is up. */
  after(fn: (url: string) => Promise<unknown> | unknown): void;
}

/**
 * One engine shared by a describe block's hooks and tests. node:test runs a block's
 * `before` and `after` hooks even when every test in it skips, so a hook that opens
 * or cleans up engine state must not run when the engine is down: a cleanup `after`
 * that deletes keys on an unreachable Redis fails the whole run with nothing tested.
 * Hooks registered here run only when the probe found the engine; call `suiteEngine`
 * first in the block, so its probe runs before the hooks that need its answer.
 * With `CASEBOOK_REQUIRE_ENGINES=1` the probe throws, failing the block (as in CI).
 *
 * @example
 * describe("three services on real Redis", () => {
 *   const redis = suiteEngine(requireRedis);
 *   redis.before(async (url) => { services = await start(url); });
 *   redis.after(async (url) => { await services.stop(); await deleteKeys(url, prefix); });
 *   test("…", async (t) => { const url = redis.use(t); if (!url) return; … });
 * });
 */
export function suiteEngine(probe: (t: SkippableContext) => Promise<string | undefined>): SuiteEngine {
  let url: string | undefined;
  let skipReason = "engine not probed yet";
  before(async () => {
    url = await probe({
      skip: (message) => {
        skipReason = message ?? "engine unavailable";
      },
    });
  });
  return {
    get url() {
      return url;
    },
    use(t) {
      if (url === undefined) t.skip(skipReason);
      return url;
    },
    before(fn) {
      before(async () => {
        if (url !== undefined) await fn(url);
      });
    },
    after(fn) {
      after(async () => {
        if (url !== undefined) await fn(url);
      });
    },
  };
}

let sequence = 0;

/** A name unique to this test process, for key prefixes, schemas and databases. */
export function uniqueName(prefix: string): string {
  sequence += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${sequence.toString(36)}`;
}
