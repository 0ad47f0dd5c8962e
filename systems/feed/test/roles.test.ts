/**
 * The roles as separate processes on the real engines: an API replica in this process
 * (FEED_ROLE=api, no fan-out worker) and two fan-out workers as child processes
 * (FEED_ROLE=fanout, through the real entry point), sharing PostgreSQL (a fresh schema) and
 * Redis (a key prefix of their own). A post through the API reaches the follower's list by a
 * worker process; the API replica answers no fan-out itself.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { eventually } from "@casebook/lab/eventually";
import { startServerProcess } from "@casebook/lab/server-process";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { deletePrefixed } from "../bench/read-run.ts";
import { migrateFeed } from "../src/store/migrate.ts";
import { openFeed } from "./feed-fixture.ts";

const entry = new URL("../src/main.ts", import.meta.url);

test("FD-09 FD-16 fan-out workers run as separate processes (FEED_ROLE=fanout) and share the queue with an API-only replica", async (t) => {
  const redisUrl = await requireRedis(t);
  const pgUrl = await requirePostgres(t);
  if (!redisUrl || !pgUrl) return;
  const prefix = `feed:${uniqueName("roles")}:`;
  const schema = await openPostgresTestSchema(pgUrl, {
    system: "feed",
    prefix: "feed_roles",
    prepare: migrateFeed,
  });
  const env = {
    DATABASE_URL: pgUrl,
    FEED_DB_SCHEMA: schema.schema,
    REDIS_URL: redisUrl,
    FEED_REDIS_PREFIX: prefix,
  };
  const api = await openFeed({ ...env, FEED_ROLE: "api" });
  const workers = await Promise.all(
    [1, 2].map((n) =>
      startServerProcess({
        name: `feed-fanout-${n}`,
        entry,
        env: { ...env, FEED_ROLE: "fanout", FEED_WORKER_ID: String(n) },
      }),
    ),
  );
  try {
    assert.equal(api.running.worker, undefined, "the API replica runs no fan-out");
    await api.follow(2, 1);
    await api.feed(2);
    const id = await api.post(1, "through a worker process");
    await eventually(async () => (await api.feed(2)).body.posts.some((p) => p.id === id), {
      what: "the post in the follower's feed, fanned out by a worker process",
      timeoutMs: 30_000,
    });
    const metrics = await (await fetch(`${workers[0]!.url}/metrics`)).text();
    assert.match(metrics, /^feed_fanout_queue_depth \d+$/m);
    assert.equal((await fetch(`${workers[0]!.url}/v1/users/2/feed`)).status, 404, "a worker serves no API");
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
    await schema.drop();
    // The lists this test made live under its own prefix: leave nothing behind on the shared Redis.
    const redis = await connectRedis({ url: redisUrl, commandTimeoutMs: 5_000 });
    try {
      await deletePrefixed(redis, prefix);
    } finally {
      await closeRedis(redis);
    }
  }
});
