/**
 * FD-24's fourth rejected design, as a server the read bench can load the same way as ours:
 * the whole home-feed page cached with a 1 h TTL. A read is one Redis GET of the rendered page;
 * a miss computes it by the SQL join (bench/join-feed-server.ts's query) and stores it with
 * `SET … EX 3600` — nothing invalidates it, so a post made after the page was cached stays
 * invisible until the entry expires (the text's "stale feed; invalidation is the real
 * problem"). Each answer carries `age: <seconds since the page was built>`, from which the
 * bench reads the staleness. No authentication (as the join server: it flatters this side).
 * Reads DATABASE_URL, FEED_DB_SCHEMA, REDIS_URL, FEED_REDIS_PREFIX, PORT, HOST.
 *
 * @example
 * // DATABASE_URL=… FEED_DB_SCHEMA=… REDIS_URL=redis://127.0.0.1:6379 FEED_REDIS_PREFIX=feed:x: node systems/feed/bench/whole-feed-cache-server.ts
 */
import { createServer } from "node:http";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { openDatabase } from "@casebook/infra/sql/open-database";

const PATH = /^\/v1\/users\/(\d{1,18})\/feed(?:\?limit=(\d{1,3}))?$/;
const DEFAULT_LIMIT = 20;
/** The design's TTL: an hour. */
export const WHOLE_FEED_TTL_S = 3_600;

const db = await openDatabase({
  system: "feed",
  url: process.env.DATABASE_URL,
  schema: process.env.FEED_DB_SCHEMA,
  pool: { maxConnections: 10 },
});
const redis = await connectRedis({
  url: process.env.REDIS_URL,
  keyPrefix: process.env.FEED_REDIS_PREFIX ?? "feed:wholecache:",
  commandTimeoutMs: 2_000,
});

/** The page as the join computes it, with the time it was built. */
async function buildPage(userId: bigint, limit: number): Promise<string> {
  const { rows } = await db.query<{ id: bigint; author_id: bigint; body: string; created_at: Date }>(
    `SELECT p.id, p.author_id, p.body, p.created_at
       FROM follows f JOIN posts p ON p.author_id = f.followee_id
      WHERE f.follower_id = $1 AND p.deleted_at IS NULL
      ORDER BY p.id DESC LIMIT $2`,
    [userId, limit],
    { name: "feed_join_read" },
  );
  const posts = rows.map((r) => ({
    id: String(r.id),
    authorId: String(r.author_id),
    text: r.body,
    createdAt: r.created_at.toISOString(),
  }));
  return JSON.stringify({ builtAtMs: Date.now(), posts });
}

async function page(userId: bigint, limit: number): Promise<string> {
  const key = `whole:{${userId}}:${limit}`;
  const cached = await redis.get(key);
  if (cached !== null) return cached;
  const built = await buildPage(userId, limit);
  await redis.set(key, built, "EX", WHOLE_FEED_TTL_S);
  return built;
}

const server = createServer((req, res) => {
  if (req.url === "/healthz" || req.url === "/readyz") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    return;
  }
  const match = PATH.exec(req.url ?? "");
  if (match === null) {
    res.writeHead(404).end();
    return;
  }
  page(BigInt(match[1]!), Number(match[2] ?? DEFAULT_LIMIT)).then(
    (body) => {
      const builtAtMs = Number(/"builtAtMs":(\d+)/.exec(body)?.[1] ?? Date.now());
      const age = Math.max(0, Math.floor((Date.now() - builtAtMs) / 1000));
      res.writeHead(200, { "content-type": "application/json", age: String(age) }).end(body);
    },
    () => res.writeHead(503).end(),
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1");
process.once("SIGTERM", () =>
  server.close(() => void Promise.allSettled([db.close(), closeRedis(redis)]).finally(() => process.exit(0))),
);
