/**
 * FD-24's first rejected design, as a server the read bench can load the same way as ours: the
 * home feed as ONE SQL join between follows and posts, newest first, on the same schema and
 * data — no lists, no Redis, no cache. `GET /v1/users/{id}/feed?limit=N` answers the page as
 * JSON; there is no authentication (the bench reads the Authorization header and ignores it,
 * which flatters this side by a key check). GET /readyz answers 200 (lab's readiness check).
 * Reads DATABASE_URL, FEED_DB_SCHEMA, PORT, HOST.
 *
 * @example
 * // DATABASE_URL=postgres://… FEED_DB_SCHEMA=feed_read_bench_x PORT=8190 node systems/feed/bench/join-feed-server.ts
 */
import { createServer } from "node:http";
import { openDatabase } from "@casebook/infra/sql/open-database";

const PATH = /^\/v1\/users\/(\d{1,18})\/feed(?:\?limit=(\d{1,3}))?$/;
/** The ours' default page. */
const DEFAULT_LIMIT = 20;

const db = await openDatabase({
  system: "feed",
  url: process.env.DATABASE_URL,
  schema: process.env.FEED_DB_SCHEMA,
  pool: { maxConnections: 10 },
});

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
  db.query<{ id: bigint; author_id: bigint; body: string; created_at: Date }>(
    `SELECT p.id, p.author_id, p.body, p.created_at
       FROM follows f JOIN posts p ON p.author_id = f.followee_id
      WHERE f.follower_id = $1 AND p.deleted_at IS NULL
      ORDER BY p.id DESC LIMIT $2`,
    [BigInt(match[1]!), Number(match[2] ?? DEFAULT_LIMIT)],
    { name: "feed_join_read" },
  ).then(
    ({ rows }) => {
      const posts = rows.map((r) => ({
        id: String(r.id),
        authorId: String(r.author_id),
        text: r.body,
        createdAt: r.created_at.toISOString(),
      }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ posts }));
    },
    () => res.writeHead(503).end(),
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1");
process.once("SIGTERM", () => server.close(() => void db.close().finally(() => process.exit(0))));
