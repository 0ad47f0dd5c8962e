/**
 * chat as separate OS processes, the way it is deployed (CH-04, CH-23, CH-27): one send
 * service (role api) and gateways (role gateway) on the real PostgreSQL and Redis, each
 * through src/main.ts on a port chosen here, so a restarted process comes back where its
 * peers expect it. Each child is guarded by lab's reaper and stopped by the test.
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { uniqueName } from "@casebook/lab/test-engines";
import { JWT_SECRET } from "./system-fixture.ts";

export { type ChatProcess, startChatProcess } from "../src/edge/chat-process.ts";

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
    // A cleanup, not a request path: KEYS over a shared Redis may take more than the 250 ms default
    // on a loaded machine (it failed once at load 22), and nothing waits on it but the test's end.
    const redis = await connectRedis({ url: input.redisUrl, commandTimeoutMs: 10_000 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await closeRedis(redis);
  };
  return { env, schema, cleanup };
}
