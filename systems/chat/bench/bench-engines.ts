/**
 * The engines both sides of the bench share: PostgreSQL ($DATABASE_URL, else a throw-away
 * cluster spawned for the run) for chat's durable history, and one Redis ($REDIS_URL, else
 * a spawned redis-server) for chat's session table and routing and for socket.io's streams
 * adapter. The run writes under its own schema and one `chat:` key prefix, both dropped at
 * the end: a shared engine is never flushed.
 *
 * @example
 * const engines = await openBenchEngines({ env: process.env, log: benchLog });
 * try { engines.databaseUrl; engines.redisUrl; engines.prefix; } finally { await engines.close(); }
 */
import { randomBytes } from "node:crypto";
import { closeRedis, connectRedis, redactRedisUrl } from "@casebook/infra/redis/connect-redis";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { spawnPostgres } from "@casebook/lab/spawn-postgres";
import { spawnRedis } from "@casebook/lab/spawn-redis";

export interface BenchEngines {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** chat's schema for this run. */
  readonly schema: string;
  /** Every Redis key of the run starts with it (chat's sessions, socket.io's stream). */
  readonly prefix: string;
  /** What ran, for the report. */
  readonly label: string;
  close(): Promise<void>;
}

/** Keys per SCAN page while cleaning up; rounds bounded far above what a run writes. */
const SCAN_PAGE = 1_000;
const MAX_SCAN_ROUNDS = 100_000;

async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const redis = await connectRedis({ url });
  try {
    let cursor = "0";
    for (let round = 0; round < MAX_SCAN_ROUNDS; round++) {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", SCAN_PAGE);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === "0") return;
    }
  } finally {
    await closeRedis(redis);
  }
}

/**
 * ANALYZE every table of chat's schema: the population was just written into empty tables, and
 * until autovacuum's analyze comes round (a minute or more later) the planner has no statistics
 * for them — the run would measure plans for empty tables, then change plans part-way through.
 * A database loaded in bulk gets its ANALYZE before it serves; so does the bench's.
 */
export async function analyzeSchema(databaseUrl: string, schema: string): Promise<void> {
  const db = await openDatabase({ system: "chat", url: databaseUrl, schema });
  try {
    const tables = await db.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
      [schema],
    );
    for (const { name } of tables.rows)
      await db.exec(`ANALYZE ${quoteIdentifier(schema)}.${quoteIdentifier(name)}`);
  } finally {
    await db.close();
  }
}

export async function openBenchEngines(options: {
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<BenchEngines> {
  const run = `${process.pid.toString(36)}${randomBytes(3).toString("hex")}`;
  const schema = `chat_bench_${run}`;
  const prefix = `chat:b${run}:`;
  const pg = options.env.DATABASE_URL ? undefined : await spawnPostgres();
  const redis = options.env.REDIS_URL
    ? undefined
    : await spawnRedis().catch(async (error) => {
        await pg?.stop();
        throw error;
      });
  const databaseUrl = pg?.url ?? options.env.DATABASE_URL!;
  const redisUrl = redis?.url ?? options.env.REDIS_URL!;
  const where = (spawned: boolean) => (spawned ? "spawned for this run" : "from the environment");
  const label = `PostgreSQL ${where(pg !== undefined)}, Redis ${redactRedisUrl(redisUrl)} ${where(redis !== undefined)}`;
  options.log(`chat bench engines: ${label}; schema ${schema}, Redis prefix ${prefix}`);
  return {
    databaseUrl,
    redisUrl,
    schema,
    prefix,
    label,
    close: async () => {
      if (pg) await pg.stop();
      else {
        const db = await openDatabase({ system: "chat", url: databaseUrl, schema });
        await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`).finally(() => db.close());
      }
      if (redis) await redis.stop();
      else await dropRedisPrefix(redisUrl, prefix);
    },
  };
}
