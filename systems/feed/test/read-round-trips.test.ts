/**
 * What one warm home-feed read costs (issue 20): NO database round trip and ONE Redis round
 * trip — the key from the key cache, then the `home-read` script: the list, the reader's cached
 * view (pulled followees, mutes), the pulled authors' cached ids and the page's cached bodies.
 * The first slice made four database round trips, the second two. Counted on the service's
 * own database handle and script runner, end to end over HTTP; and every write that changes
 * what the next read must show is seen by it, through the caches: an edit, a delete, a follow,
 * a mute, an author crossing the tier line. On both engines: the in-process twins, and the
 * real `home-read` script on Redis (a key prefix of its own).
 */
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { systemClock } from "@casebook/kit/clock";
import {
  CLOSED_PASS_SKIP,
  closedEnginePass,
  requireRedis,
  runEngineFree,
  suiteEngine,
  uniqueName,
} from "@casebook/lab/test-engines";
import type { FeedCursor } from "../src/domain/feed-cursor.ts";
import { type FeedPage, HomeFeed } from "../src/domain/home-feed.ts";
import { toPostJson } from "../src/domain/post-json.ts";
import { CelebrityLists } from "../src/store/celebrity-lists.ts";
import { type FeedFixture, openFeed } from "./feed-fixture.ts";

let f: FeedFixture;
/**
 * Keys remembered for the longest TTL allowed: an entry past half its TTL is re-checked in the
 * background, and at load ~20 a 5 s TTL let one such SELECT land inside a counted warm read
 * (the read itself made none).
 */
const KEY_CACHE = { FEED_KEY_CACHE_TTL_MS: "60000" };

describe("in-process", { skip: closedEnginePass ? CLOSED_PASS_SKIP : false }, () => {
  before(async () => {
    f = await runEngineFree("feed's in-process reads", () => openFeed(KEY_CACHE));
  });
  after(async () => {
    await f?.close();
  });
  warmReads(() => true);
});

describe("redis", () => {
  const redis = suiteEngine(requireRedis);
  const prefix = `feed:${uniqueName("warm")}:`;
  redis.before(async (url) => {
    f = await openFeed({ ...KEY_CACHE, REDIS_URL: url, FEED_REDIS_PREFIX: prefix });
  });
  redis.after(async (url) => {
    await f?.close();
    const client = await connectRedis({ url, commandTimeoutMs: 5_000 });
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.unlink(...keys);
    await closeRedis(client);
  });
  warmReads((t) => redis.use(t) !== undefined);
});

/** Counts the database queries and the script runner's round trips made while `body` runs. */
async function count(body: () => Promise<void>): Promise<{ queries: string[]; redis: string[] }> {
  const { db, runner } = f.running;
  const [query, run, runBatch] = [db.query, runner.run, runner.runBatch];
  const seen = { queries: [] as string[], redis: [] as string[] };
  db.query = ((text: string, ...rest: unknown[]) => {
    seen.queries.push(text.replace(/\s+/g, " ").trim().slice(0, 60));
    return (query as (...a: unknown[]) => unknown).call(db, text, ...rest);
  }) as typeof db.query;
  runner.run = (name, keys, args) => {
    seen.redis.push(name);
    return run.call(runner, name, keys, args);
  };
  runner.runBatch = (calls) => {
    seen.redis.push(`batch of ${calls.length}`);
    return runBatch.call(runner, calls);
  };
  try {
    await body();
  } finally {
    db.query = query;
    runner.run = run;
    runner.runBatch = runBatch;
  }
  return seen;
}

const texts = async (userId: number, query?: string) =>
  (await f.feed(userId, query)).body.posts.map((p) => p.text);

/** A read that must be warm: its page, after asserting it made no query and one script call. */
async function warmRead(userId: number, query?: string): Promise<(string | null)[]> {
  let page: (string | null)[] = [];
  const seen = await count(async () => {
    page = await texts(userId, query);
  });
  assert.deepEqual(seen.queries, [], "no database round trip");
  assert.deepEqual(seen.redis, ["home-read"], "one Redis round trip");
  return page;
}

/**
 * A warm page is the steps' page: the same posts, cursors and state, and its posts rendered
 * for the API (what the route sends) byte for byte what the API's serialiser makes of them.
 */
function assertSamePage(warm: FeedPage, cold: FeedPage, message: string): void {
  assert.ok(warm.rendered !== undefined, `${message}: served warm`);
  assert.equal(
    warm.rendered,
    cold.posts.map((p) => JSON.stringify(toPostJson(p))).join(","),
    `${message}: rendered`,
  );
  // The page's fields as a reader sees them (a warm page's posts are a getter, decoded when read).
  const fields = {
    posts: warm.posts,
    nextCursor: warm.nextCursor,
    newerCursor: warm.newerCursor,
    partial: warm.partial,
  };
  assert.deepEqual(fields, cold, message);
}

function warmReads(ready: (t: TestContext) => boolean): void {
  test("FD-13 FD-14 a warm home-feed read is one Redis round trip and no database one: list, view, celebrity ids and bodies in one script", async (t) => {
    if (!ready(t)) return;
    const [reader, celebrity, friend, muted] = [10, 20, 30, 40];
    for (let fan = 1_000; fan < 1_007; fan++) await f.follow(fan, celebrity); // 8 followers > 6: pulled
    for (const target of [celebrity, friend, muted]) await f.follow(reader, target);
    assert.equal((await f.call("PUT", `/v1/users/${reader}/hidden/${muted}`, { kind: "mute" })).status, 204);
    await f.post(celebrity, "star");
    await f.post(friend, "friend");
    await f.post(muted, "muted");
    await f.drain();
    // The first read rebuilds the list by pull and fills the caches; the second is warm.
    assert.deepEqual(await texts(reader), ["friend", "star"], "the muted author filtered");
    assert.deepEqual(await warmRead(reader), ["friend", "star"]);
  });

  test("FD-21 an edit and a delete show at the next read through the cached bodies; the read after is warm again", async (t) => {
    if (!ready(t)) return;
    const [reader, author] = [110, 120];
    await f.follow(reader, author);
    const keep = await f.post(author, "v1");
    const doomed = await f.post(author, "doomed");
    await f.drain();
    await texts(reader);
    assert.deepEqual(await warmRead(reader), ["doomed", "v1"]);
    assert.equal((await f.call("PATCH", `/v1/users/${author}/posts/${keep}`, { text: "v2" })).status, 200);
    assert.equal((await f.call("DELETE", `/v1/users/${author}/posts/${doomed}`)).status, 204);
    assert.deepEqual(
      await warmRead(reader),
      ["v2"],
      "written through: still warm, new text, the deleted one gone",
    );
  });

  test("FD-06 FD-13 follows, mutes and a tier crossing drop the reader's cached view: the next read shows them", async (t) => {
    if (!ready(t)) return;
    const [reader, star, rising] = [210, 220, 230];
    for (let fan = 2_000; fan < 2_007; fan++) await f.follow(fan, star); // pulled (> 6 followers)
    await f.post(star, "star post");
    await f.post(rising, "rising 1");
    await f.drain();
    await texts(reader);
    assert.deepEqual(await warmRead(reader), []);
    await f.follow(reader, star);
    assert.deepEqual(await texts(reader), ["star post"], "the follow dropped the view: the star is pulled");
    assert.deepEqual(await warmRead(reader), ["star post"]);
    assert.equal((await f.call("PUT", `/v1/users/${reader}/hidden/${star}`, { kind: "block" })).status, 204);
    assert.deepEqual(await texts(reader), [], "the block shows at the next read");
    assert.equal((await f.call("DELETE", `/v1/users/${reader}/hidden/${star}`)).status, 204);
    assert.deepEqual(await texts(reader), ["star post"]);
    // `rising` is pushed (few followers): the reader follows, the merge puts its post in the list.
    await f.follow(reader, rising);
    await f.drain();
    assert.deepEqual(await texts(reader), ["rising 1", "star post"]);
    for (let fan = 2_100; fan < 2_106; fan++) await f.follow(fan, rising); // 7 followers: crosses the line
    await f.post(rising, "rising 2"); // pulled now: the fan-out pushes it into no list
    await f.drain();
    assert.deepEqual(
      await texts(reader),
      ["rising 2", "rising 1", "star post"],
      "the crossing dropped every view: rising is pulled",
    );
    assert.deepEqual(await warmRead(reader), ["rising 2", "rising 1", "star post"]);
  });

  test("FD-13 a warm page reads only its own bodies: one being edited past the page's end leaves the read warm, one on the page sends it the slow way", async (t) => {
    if (!ready(t)) return;
    const [reader, author] = [410, 420];
    await f.follow(reader, author);
    const ids: string[] = [];
    for (const text of ["p1", "p2", "p3", "p4", "p5"]) ids.push(await f.post(author, text));
    await f.drain();
    await texts(reader);
    assert.deepEqual(await warmRead(reader, "?limit=2"), ["p5", "p4"]);
    // p3 is among the four candidates the slow way's first round looks at for a page of 2, not on the page.
    await f.running.bodies.beginChange(BigInt(ids[2]!));
    assert.deepEqual(await warmRead(reader, "?limit=2"), ["p5", "p4"], "p3's body not needed: still warm");
    const seen = await count(async () => {
      assert.deepEqual(await texts(reader, "?limit=3"), ["p5", "p4", "p3"], "the slow way reads p3 itself");
    });
    assert.ok(seen.queries.length > 0, "a body on the page being edited: the slow way, from the database");
  });

  test("FD-14 FD-15 FD-21 the warm page is the page the steps make: every reader, page size and cursor, with deleted posts and hidden authors", async (t) => {
    if (!ready(t)) return;
    const { running } = f;
    const authors = [310, 320, 330, 340];
    const [celebrity, readers] = [350, [360, 370, 380]];
    for (let fan = 3_000; fan < 3_007; fan++) await f.follow(fan, celebrity); // pulled
    for (const [i, reader] of readers.entries())
      for (const target of [...authors.slice(i), celebrity]) await f.follow(reader, target);
    const ids: string[] = [];
    for (let round = 0; round < 4; round++)
      for (const author of [...authors, celebrity]) ids.push(await f.post(author, `${author}:${round}`));
    for (const doomed of [ids[2]!, ids[9]!, ids[16]!]) {
      const author = Number(doomed === ids[9] ? celebrity : authors[ids.indexOf(doomed) % 5]);
      assert.equal((await f.call("DELETE", `/v1/users/${author}/posts/${doomed}`)).status, 204);
    }
    assert.equal((await f.call("PUT", `/v1/users/360/hidden/330`, { kind: "mute" })).status, 204);
    await f.drain();
    const celebrities = new CelebrityLists(running.runner, running.posts, {
      window: running.config.timelineCap,
      ttlMs: running.config.celebrityCacheTtlMs,
    });
    // The same read without the one-round-trip path: the steps, through the same stores.
    const steps = new HomeFeed({
      timelines: running.timelines,
      posts: running.bodies,
      graph: running.views,
      clock: systemClock,
      thresholds: () => running.thresholds,
      cap: running.config.timelineCap,
      rebuildMaxAgeMs: running.config.timelineTtlS * 1000,
      maxRebuilds: 8,
      newOwner: () => "steps",
      celebrityIds: (author, before, limit) => celebrities.ids(author, before, limit),
    });
    const warmBefore =
      (await running.metrics.homeReads.get()).values.find((v) => v.labels.path === "warm")?.value ?? 0;
    let compared = 0;
    for (const reader of readers) {
      await texts(reader);
      await texts(reader); // the caches filled
      for (const limit of [1, 2, 3, 7]) {
        let cursor: FeedCursor | undefined;
        const seen: bigint[] = [];
        for (let page = 0; page < 40; page++) {
          const warm: FeedPage = await running.feed.read(BigInt(reader), { cursor, limit });
          const cold: FeedPage = await steps.read(BigInt(reader), { cursor, limit });
          assertSamePage(warm, cold, `reader ${reader}, limit ${limit}, page ${page}`);
          compared++;
          seen.push(...warm.posts.map((p) => p.id));
          if (page === 0 && warm.newerCursor) {
            const since = { cursor: warm.newerCursor, limit };
            assertSamePage(
              await running.feed.read(BigInt(reader), since),
              await steps.read(BigInt(reader), since),
              `reader ${reader}, limit ${limit}, newer`,
            );
          }
          if (!warm.nextCursor) break;
          cursor = warm.nextCursor;
        }
        assert.equal(new Set(seen).size, seen.length, "no post twice across pages");
        for (const doomed of [ids[2]!, ids[9]!, ids[16]!])
          assert.ok(!seen.includes(BigInt(doomed)), "deleted");
        if (reader === 360)
          assert.ok(seen.length > 0 && !seen.some((id) => ids.indexOf(String(id)) % 5 === 2), "muted");
      }
    }
    const warmAfter =
      (await running.metrics.homeReads.get()).values.find((v) => v.labels.path === "warm")?.value ?? 0;
    assert.ok(
      warmAfter - warmBefore >= compared,
      `every compared page was served warm (${warmAfter - warmBefore} of ${compared})`,
    );
  });
}
