/**
 * chat as separate OS processes, the way it is deployed (CH-04, CH-23, CH-27): one send
 * service (role api) and gateways (role gateway) on the real PostgreSQL and Redis, each
 * through src/main.ts on a port chosen here, so a restarted process comes back where its
 * peers expect it. Each child is guarded by lab's reaper and stopped by the test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { freePort } from "@casebook/lab/free-port";
import { uniqueName } from "@casebook/lab/test-engines";
import { JWT_SECRET } from "./system-fixture.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const READY_TIMEOUT_MS = 60_000;

export interface ChatProcess {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** SIGTERM and wait for the exit (graceful: a gateway drains with 4000). */
  term(): Promise<number | null>;
  /** SIGKILL and wait: a crash, nothing runs after it. */
  kill(): Promise<void>;
}

async function ready(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

export async function startChatProcess(
  name: string,
  env: NodeJS.ProcessEnv,
  port?: number,
): Promise<ChatProcess> {
  const chosen = port ?? (await freePort());
  const url = `http://127.0.0.1:${chosen}`;
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: { ...process.env, LOG_LEVEL: "warn", ...env, PORT: String(chosen), HOST: "127.0.0.1" },
    stdio: ["ignore", "ignore", 2],
    detached: true,
  });
  const guard = guardProcessTree(child.pid!);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      guard.release();
      resolve(code);
    }),
  );
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!(await ready(url))) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited while starting`);
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${name} not ready within ${READY_TIMEOUT_MS} ms`);
    }
    await sleep(50);
  }
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    url,
    port: chosen,
    async term() {
      if (alive()) child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      if (alive()) child.kill("SIGKILL");
      await exited;
    },
  };
}

/**
 * The environment every process of one deployed test shares — its own schema and Redis
 * prefix, the JWT secret, the issuer token, a short drain — and the cleanup that drops them.
 */
export function deployedEnv(input: { dbUrl: string; redisUrl: string; issuer: string; name: string }) {
  const schema = uniqueName(input.name);
  const prefix = `${uniqueName(input.name)}:`;
  const env = {
    DATABASE_URL: input.dbUrl,
    CHAT_DB_SCHEMA: schema,
    CHAT_DB_MAX_CONNECTIONS: "4",
    REDIS_URL: input.redisUrl,
    CHAT_REDIS_PREFIX: prefix,
    CHAT_JWT_SECRET: JWT_SECRET,
    CHAT_ISSUER_TOKEN: input.issuer,
    CHAT_DRAIN_MS: "100",
  };
  const cleanup = async () => {
    const db = await openDatabase({ system: "chat", url: input.dbUrl, schema });
    await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`).finally(() => db.close());
    const redis = await connectRedis({ url: input.redisUrl });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await closeRedis(redis);
  };
  return { env, schema, cleanup };
}
