/**
 * The console's scenario for feed (issue 20, seed 000 §3 FD-05/06/08): a celebrity posts — when
 * does each follower see it at their next read, under pure push and under the hybrid?
 *
 * A world of its own, never the service's data: an in-memory PGlite (migrated), the in-process
 * timelines, one celebrity with `followers` followers (the seed graph's shape, store/seed-graph.ts),
 * every follower with a list (all active). Then, through the real mechanisms:
 *
 * 1. **pure push**: the post is written (post + fan-out event, one transaction) and fanned out by
 *    the real Fanout (follower pages from SQL, pipelined `timeline-add` into the lists); each
 *    batch's landing is timed — the plot's push line is the share of followers whose list holds
 *    the post, by ms since the post was written. A sample of followers then reads its feed.
 * 2. **hybrid**: the line derives from the rate just measured and a delay target (FD-08:
 *    capacity × target); the celebrity, above it, is pulled at read time — the post is written,
 *    the fan-out writes the author's own list only, and a sample of followers reads at once (and
 *    again at intervals): the hybrid line is the share of them whose read holds the post.
 *
 * Bounded: `followers` ≤ MAX_FOLLOWERS, the run's 60 s signal checked between steps; the world
 * is closed in every case.
 *
 * @example
 * new ScenarioRuns([celebrityPostScenario()]);
 */
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { InProcessScriptRunner } from "@casebook/infra/redis/script-runner";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { Fanout } from "../domain/fanout.ts";
import { HomeFeed } from "../domain/home-feed.ts";
import type { FanoutTimelines } from "../domain/ports.ts";
import { deriveThresholds, type Thresholds, tierOf } from "../domain/tiers.ts";
import { GraphStore } from "../store/graph-store.ts";
import { migrateFeed } from "../store/migrate.ts";
import { PostStore } from "../store/post-store.ts";
import { timelineTwins } from "../store/script-twins.ts";
import { seedGraph } from "../store/seed-graph.ts";
import { TimelineStore, timelineScriptsDir } from "../store/timeline-store.ts";

export const DEFAULT_FOLLOWERS = 20_000;
export const MAX_FOLLOWERS = 100_000;
/** Followers whose feeds are read to check what they see (each read is a real hybrid read). */
export const DEFAULT_SAMPLED_READERS = 50;
/** FD-08's propagation-delay target for the hybrid's line, scaled to one process's lists. */
const HYBRID_DELAY_TARGET_MS = 50;
/** The hybrid's sampled reads are repeated this many times, this far apart. */
const HYBRID_READ_ROUNDS = 4;
const HYBRID_READ_EVERY_MS = 100;
const CAP = 128;
const PAGE_SIZE = 1_000;

export interface CelebrityPostOptions {
  /** The celebrity's followers. Default DEFAULT_FOLLOWERS, at most MAX_FOLLOWERS. */
  followers?: number;
  sampledReaders?: number;
}

const PUSH = "pure push: followers whose next read shows it (list written)";
const HYBRID = "hybrid: sampled followers whose next read shows it";

/** The private world; `close` drops it all. */
async function openWorld(followers: number) {
  const db = await openDatabase({ system: "feed", dataDir: "memory://", env: {} });
  try {
    await migrateFeed(db);
    const keyspace = new InProcessKeyspace({
      clock: systemClock,
      maxKeys: 4 * MAX_FOLLOWERS,
      maxElementsPerKey: 10 * CAP,
    });
    const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
    const timelines = new TimelineStore(
      new InProcessScriptRunner({ registry, twins: timelineTwins, keyspace }),
      {
        cap: CAP,
        ttlMs: 3_600_000,
        lockMs: 5_000,
      },
    );
    // Account 1 is the celebrity: the seed's top author, followed by `followers` of 2 × followers accounts.
    await seedGraph(db, {
      users: 2 * followers,
      topShare: 0.5,
      alpha: 1,
      minFollowers: followers,
      activeShare: 1,
      nowMs: Date.now(),
    });
    return { db, timelines, posts: new PostStore(db), graph: new GraphStore(db), close: () => db.close() };
  } catch (error) {
    await Promise.allSettled([db.close()]);
    throw error;
  }
}

type World = Awaited<ReturnType<typeof openWorld>>;

/** Every follower of the celebrity, in pages (keyset), as the fan-out reads them. */
async function followersOf(world: World, authorId: bigint): Promise<bigint[]> {
  const all: bigint[] = [];
  for (let afterId = 0n; ; ) {
    const page = await world.graph.followersPage(authorId, { afterId, limit: PAGE_SIZE });
    all.push(...page);
    if (page.length < PAGE_SIZE) return all;
    afterId = page.at(-1)!;
  }
}

/** A fan-out whose list writes are timed batch by batch (ms since `startedAt`, lists written so far). */
function timedFanout(world: World, thresholds: Thresholds) {
  const landed: { atMs: number; written: number }[] = [];
  let written = 0;
  let startedAt = 0;
  const counted: FanoutTimelines = {
    pushMany: async (ids, entry) => {
      const n = await world.timelines.pushMany(ids, entry);
      written += n;
      landed.push({ atMs: performance.now() - startedAt, written });
      return n;
    },
    mergeInto: (userId, entries) => world.timelines.mergeInto(userId, entries),
    remove: (userId, ids) => world.timelines.remove(userId, ids),
  };
  const fanout = new Fanout({
    graph: world.graph,
    timelines: counted,
    posts: world.posts,
    clock: systemClock,
    thresholds: () => thresholds,
    activeDays: 7,
    pageSize: PAGE_SIZE,
    cap: CAP,
  });
  return {
    landed,
    start: () => {
      startedAt = performance.now();
      landed.length = 0;
      written = 0;
    },
    handle: (postId: bigint) => fanout.handle({ kind: "post", actorId: 1n, targetId: postId }),
  };
}

function feedOf(world: World, thresholds: Thresholds): HomeFeed {
  let owner = 0;
  return new HomeFeed({
    timelines: world.timelines,
    posts: world.posts,
    graph: world.graph,
    clock: systemClock,
    thresholds: () => thresholds,
    cap: CAP,
    rebuildMaxAgeMs: 86_400_000,
    maxRebuilds: 8,
    newOwner: () => `scenario-${owner++}`,
    // No celebrity cache: "at the next read" (FD-13's cache would add up to its TTL).
    celebrityIds: async (author, before, limit) =>
      (await world.posts.recentOf(author, { beforeId: before, limit })).map((e) => e.id),
  });
}

/** How many of `readers` see `postId` at the top of their home feed now. */
async function seeing(feed: HomeFeed, readers: readonly bigint[], postId: bigint): Promise<number> {
  let seen = 0;
  for (const reader of readers) {
    const page = await feed.read(reader, { limit: 1 });
    if (page.posts[0]?.id === postId) seen++;
  }
  return seen;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

export function celebrityPostScenario(options: CelebrityPostOptions = {}): Scenario {
  const followers = Math.min(options.followers ?? DEFAULT_FOLLOWERS, MAX_FOLLOWERS);
  const sampled = Math.min(options.sampledReaders ?? DEFAULT_SAMPLED_READERS, followers);
  return {
    id: "celebrity-post",
    title: "A celebrity posts: pure push vs hybrid",
    line: `One author with ${fmt(followers)} followers posts: under pure push each follower sees it once the fan-out reaches their list; under the hybrid the author is pulled and every follower sees it at their next read (FD-05, FD-06, FD-08).`,
    xLabel: "ms since the post was written",
    yLabel: "% of followers who see it at their next read",
    run: async (ctx: ScenarioContext) => {
      const world = await openWorld(followers);
      try {
        const all = await followersOf(world, 1n);
        // Every follower active, with a list (what push writes into; a missing list is skipped),
        // and the author's own (the fan-out writes it first).
        for (const id of [1n, ...all]) {
          await world.timelines.beginRebuild(id, "seed");
          await world.timelines.endRebuild(id, "seed");
        }
        ctx.progress(0.2);
        ctx.signal.throwIfAborted();
        const step = Math.max(1, Math.floor(all.length / sampled));
        const readers = all.filter((_, i) => i % step === 0).slice(0, sampled);
        const ids = new SnowflakeGenerator({ clock: systemClock, workerId: 1 });

        // 1. Pure push: the line at infinity.
        const pushAll = { fullPushMax: Number.MAX_SAFE_INTEGER, activePushMax: Number.MAX_SAFE_INTEGER };
        const push = timedFanout(world, pushAll);
        const pushed = await world.posts.create({
          id: ids.next(),
          authorId: 1n,
          text: "push",
          nowMs: Date.now(),
        });
        push.start();
        ctx.point(PUSH, 0, 0);
        const pushResult = await push.handle(pushed.id);
        const totalMs = push.landed.at(-1)?.atMs ?? 0;
        for (const mark of push.landed)
          ctx.point(PUSH, mark.atMs, (100 * Math.max(0, mark.written - 1)) / all.length);
        const halfMs =
          push.landed.find((mark) => mark.written - 1 >= Math.ceil(0.5 * all.length))?.atMs ?? totalMs;
        const to99Ms =
          push.landed.find((mark) => mark.written - 1 >= Math.ceil(0.99 * all.length))?.atMs ?? totalMs;
        const writesPerS = pushResult.written / (Math.max(totalMs, 1) / 1000);
        const pushSeen = await seeing(feedOf(world, pushAll), readers, pushed.id);
        ctx.progress(0.6);
        ctx.signal.throwIfAborted();

        // 2. Hybrid: the line from the rate just measured × the delay target (FD-08).
        const line = deriveThresholds({
          fanoutWritesPerS: Math.max(1, Math.round(writesPerS)),
          delayTargetMs: HYBRID_DELAY_TARGET_MS,
          activeShare: 1,
        });
        const tier = tierOf(all.length, line);
        const hybrid = timedFanout(world, line);
        const feed = feedOf(world, line);
        const posted = await world.posts.create({
          id: ids.next(),
          authorId: 1n,
          text: "hybrid",
          nowMs: Date.now(),
        });
        const startedAt = performance.now();
        hybrid.start();
        const hybridResult = await hybrid.handle(posted.id);
        const reads: { atMs: number; seen: number }[] = [];
        ctx.point(HYBRID, 0, 0);
        for (let round = 0; round < HYBRID_READ_ROUNDS; round++) {
          ctx.signal.throwIfAborted();
          const atMs = performance.now() - startedAt;
          const seen = await seeing(feed, readers, posted.id);
          reads.push({ atMs, seen });
          ctx.point(HYBRID, atMs, (100 * seen) / readers.length);
          await new Promise((resolve) => setTimeout(resolve, HYBRID_READ_EVERY_MS));
        }
        ctx.progress(1);
        const first = reads[0]!;
        return (
          `${fmt(all.length)} followers. Pure push: in half of their lists after ${fmt(halfMs)} ms, in 99% after ${fmt(to99Ms)} ms, all after ${fmt(totalMs)} ms ` +
          `(${fmt(pushResult.written)} lists written, ${fmt(writesPerS)} writes/s on this process's in-process lists); ` +
          `${pushSeen} of ${readers.length} sampled followers saw it at their next read after it. ` +
          `Hybrid (line ${fmt(line.fullPushMax)} followers = ${fmt(writesPerS)} writes/s × ${HYBRID_DELAY_TARGET_MS} ms, the celebrity in the ${tier} tier): ` +
          `${fmt(hybridResult.written)} list written (the author's own); ${first.seen} of ${readers.length} sampled followers saw it at their first read, ` +
          `begun ${fmt(first.atMs)} ms after the post was written.`
        );
      } finally {
        await Promise.allSettled([world.close()]);
      }
    },
  };
}
