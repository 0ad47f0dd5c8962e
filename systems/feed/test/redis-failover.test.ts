/**
 * FD-18's third defence on real engines: the timelines on a private Redis master with a
 * replica, watched by a private redis-sentinel (lab's spawners), the service connected
 * through the sentinel (REDIS_SENTINELS). The master is killed while users keep reading:
 * the sentinel promotes the replica, the client follows it at its next reconnect, and every
 * feed answers again with its posts from the list that survived on the replica — no
 * rebuild. Reads in the failover window (about down-after + election) pull instead, within
 * the rebuild cap, and answer 206 with the same posts; past the cap they fail fast (503).
 * Both counts are printed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnRedis } from "@casebook/lab/spawn-redis";
import { spawnRedisSentinel } from "@casebook/lab/spawn-redis-sentinel";
import { Redis } from "ioredis";
import { openFeed } from "./feed-fixture.ts";

const READERS = 10;

test("FD-18 replicas with failover: the master killed under reads, the sentinel promotes the replica and every feed answers again with its list intact (no rebuild)", async (t) => {
  const sentinel = await spawnOrSkip(t, () =>
    spawnRedisSentinel({ masterName: "feed", downAfterMs: 1_000, failoverTimeoutMs: 5_000 }),
  );
  if (!sentinel) return;
  t.after(() => sentinel.stop());
  const replica = await spawnRedis({ args: ["--replicaof", "127.0.0.1", String(sentinel.redis.port)] });
  t.after(() => replica.stop());
  const admin = new Redis(sentinel.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
  });
  t.after(() => admin.disconnect());
  await admin.connect();
  // The sentinel learns replicas from the master's INFO, every 10 s; monitoring the master
  // afresh makes it ask now instead of up to 10 s later.
  const masterPort = String(sentinel.redis.port);
  await admin.call("SENTINEL", "REMOVE", "feed");
  await admin.call("SENTINEL", "MONITOR", "feed", "127.0.0.1", masterPort, "1");
  await admin.call("SENTINEL", "SET", "feed", "down-after-milliseconds", "1000", "failover-timeout", "5000");
  const discovery = performance.now();
  await eventually(
    async () => {
      const replicas = (await admin.call("SENTINEL", "replicas", "feed")) as string[][];
      return replicas.some((r) => r.includes(String(replica.port)) && !r.join(" ").includes("disconnected"));
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  t.diagnostic(`the sentinel saw the replica after ${Math.round(performance.now() - discovery)} ms`);
  // The replica's first full sync: the master waits repl-diskless-sync-delay (5 s by default)
  // for more replicas before streaming its snapshot. Until then WAIT below cannot be answered —
  // on a quiet machine the writes were done (and WAIT had timed out) before the sync began.
  const replicaAdmin = new Redis(replica.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  t.after(() => replicaAdmin.disconnect());
  await replicaAdmin.connect();
  await eventually(
    async () => String(await replicaAdmin.call("INFO", "replication")).includes("master_link_status:up"),
    { timeoutMs: 20_000, intervalMs: 100 },
  );

  const f = await openFeed({
    REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`,
    FEED_REDIS_MASTER_NAME: "feed",
    FEED_FANOUT_WRITES_PER_S: "1000",
  });
  t.after(() => f.close());
  const author = 1;
  const readers = Array.from({ length: READERS }, (_, i) => 100 + i);
  for (const u of readers) {
    await f.follow(u, author);
    assert.equal((await f.feed(u)).status, 200); // each reader's list exists
  }
  const posted = [await f.post(author, "before"), await f.post(author, "the failover")];
  await f.drain();
  const newestFirst = posted.slice().reverse();
  for (const u of readers)
    assert.deepEqual(
      (await f.feed(u)).body.posts.map((p) => p.id),
      newestFirst,
    );
  const rebuilds = async (outcome: string) =>
    (await f.running.metrics.rebuilds.get()).values
      .filter((v) => v.labels.outcome === outcome)
      .reduce((n, v) => n + v.value, 0);
  const rebuildsBefore = await rebuilds("rebuilt");
  // Every write has reached the replica before the master dies (replication is asynchronous).
  const master = new Redis(sentinel.redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  await master.connect();
  assert.equal(await master.call("WAIT", "1", "2000"), 1);
  master.disconnect();

  await sentinel.redis.kill();
  const failed: number[] = [];
  let degradedRight = 0;
  const started = performance.now();
  await eventually(
    async () => {
      const pages = await Promise.all(readers.map((u) => f.feed(u)));
      for (const p of pages) {
        if (p.status === 206 && p.body.posts.map((x) => x.id).join() === newestFirst.join()) degradedRight++;
        else if (p.status !== 200) failed.push(p.status);
      }
      return pages.every(
        (p) => p.status === 200 && p.body.posts.map((x) => x.id).join() === newestFirst.join(),
      );
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  const recoveredMs = Math.round(performance.now() - started);
  t.diagnostic(
    `recovered in ${recoveredMs} ms; meanwhile ${degradedRight} reads answered 206 by pull with the right posts, ${failed.length} failed (statuses ${[...new Set(failed)].join(",") || "none"})`,
  );
  assert.ok(degradedRight > 0, "reads during the failover are served by pull");
  for (const s of failed) assert.equal(s, 503, "past the rebuild cap a read fails fast, never a 500");
  const promoted = (await admin.call("SENTINEL", "get-master-addr-by-name", "feed")) as string[];
  assert.equal(promoted[1], String(replica.port), "the replica is the master now");
  assert.equal(await rebuilds("rebuilt"), rebuildsBefore, "no list was lost, so nothing was rebuilt");
  // The fan-out writes to the new master: a post after the failover reaches every list.
  const after = await f.post(author, "after");
  await f.drain();
  for (const u of readers) assert.equal((await f.feed(u)).body.posts[0]?.id, after);
});
