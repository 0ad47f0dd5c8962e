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
import { connect } from "node:net";

export const testDatabaseUrl =
  process.env.CASEBOOK_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const testRedisUrl = process.env.CASEBOOK_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
export const enginesRequired = process.env.CASEBOOK_REQUIRE_ENGINES === "1";

/** Minimal context of node:test's TestContext, so suites can pass `t` or a describe-level stand-in. */
export interface SkippableContext {
  skip(message?: string): void;
}

/** Resolves true when a TCP connection to host:port opens within `timeoutMs`. */
export function tcpReachable(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
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

let sequence = 0;

/** A name unique to this test process, for key prefixes, schemas and databases. */
export function uniqueName(prefix: string): string {
  sequence += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${sequence.toString(36)}`;
}
