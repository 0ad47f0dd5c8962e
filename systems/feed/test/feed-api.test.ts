/**
 * The service end to end on its embedded engines (PGlite, the in-process timeline twin),
 * the fan-out worker driven by hand (`drain()`): the write path, the three tiers, the hybrid
 * read, deletes and edits, reposts, caching headers, bad input. Thresholds are tiny (see
 * feed-fixture.ts): push ≤ 3 followers, push-active ≤ 6, pull above.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { decimalUpToPattern, userIdSchema } from "../src/api/feed-schemas.ts";
import { HomeFeed } from "../src/domain/home-feed.ts";
import { type FeedFixture, openFeed } from "./feed-fixture.ts";

let f: FeedFixture;
before(async () => {
  f = await openFeed();
});
after(async () => {
  await f?.close();
});

let nextId = 100;
/** A fresh account id per use, so the tests share one service without meeting. */
const acct = () => nextId++;
const idsOf = (body: { posts: { id: string }[] }) => body.posts.map((p) => p.id);
const listOf = async (userId: number) =>
  (await f.running.timelines.read(BigInt(userId), { limit: 200 })).ids.map(String);

test("FD-09 the post is durable and its event queued before the answer; the author waits for no list write, and a stalled fan-out delays only the followers' freshness", async () => {
  const [author, reader] = [acct(), acct()];
  await f.follow(reader, author);
  await f.drain();
  assert.equal((await f.feed(reader)).status, 200); // the reader's list now exists
  const id = await f.post(author, "durable first");
  // No worker ran: the post is in the post store (the author feed reads it) and the queue holds its event…
  const own = await f.call("GET", `/v1/users/${author}/posts`);
  assert.deepEqual(idsOf(own.json as { posts: { id: string }[] }), [id]);
  const lag = await f.running.worker!.lag(f.running.db, Date.now());
  assert.equal(lag.unpublished, 1n);
  // …and the follower does not see it yet (freshness), until the fan-out runs.
  assert.deepEqual(idsOf((await f.feed(reader)).body), []);
  assert.equal(await f.drain(), 1);
  assert.deepEqual(idsOf((await f.feed(reader)).body), [id]);
});

test("FD-01 the two operations are separate: publishing writes the post and one event; opening the feed reads a ready list", async () => {
  const [author, reader] = [acct(), acct()];
  await f.follow(reader, author);
  await f.feed(reader);
  await f.drain();
  const id = await f.post(author, "hello");
  assert.deepEqual(await listOf(reader), [], "publishing wrote no list");
  await f.drain();
  assert.deepEqual(await listOf(reader), [id]);
  const res = await f.feed(reader);
  assert.equal(res.status, 200);
  assert.deepEqual(idsOf(res.body), [id]);
});

test("FD-03 push: below the threshold the id is copied into every follower's existing list (and the author's own)", async () => {
  const author = acct();
  const readers = [acct(), acct(), acct()];
  for (const r of readers) {
    await f.follow(r, author);
    await f.feed(r);
  }
  await f.drain();
  const id = await f.post(author, "pushed");
  await f.drain();
  for (const r of readers) assert.deepEqual(await listOf(r), [id]);
});

test("FD-06 FD-13 a celebrity (above the pull threshold) is never pushed: the post exists once, and each follower's read pulls it (cached with a short TTL)", async () => {
  const celebrity = acct();
  const fans = Array.from({ length: 7 }, () => acct()); // 7 > activePushMax 6
  for (const fan of fans) {
    await f.follow(fan, celebrity);
    await f.feed(fan);
  }
  await f.drain();
  const id = await f.post(celebrity, "to millions");
  await f.drain();
  for (const fan of fans) assert.deepEqual(await listOf(fan), [], "nothing pushed");
  for (const fan of fans) assert.deepEqual(idsOf((await f.feed(fan)).body), [id], "visible at the next read");
});

test("FD-14 the read merges the list with the celebrities' posts, newest first by id, cut to the page, with a cursor", async () => {
  const [celebrity, friend, reader] = [acct(), acct(), acct()];
  for (let i = 0; i < 7; i++) await f.follow(acct(), celebrity);
  await f.follow(reader, celebrity);
  await f.follow(reader, friend);
  await f.feed(reader);
  await f.drain();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    ids.push(await f.post(friend, `f${i}`));
    ids.push(await f.post(celebrity, `c${i}`));
  }
  await f.drain();
  const page1 = await f.feed(reader, "?limit=4");
  assert.deepEqual(idsOf(page1.body), ids.slice().reverse().slice(0, 4));
  assert.ok(page1.body.nextCursor);
  const page2 = await f.feed(reader, `?limit=4&cursor=${page1.body.nextCursor}`);
  assert.deepEqual(idsOf(page2.body), ids.slice().reverse().slice(4));
});

test("FD-15 pages by cursor neither repeat nor skip while new posts arrive; the newer-than cursor returns only what arrived", async () => {
  const [author, reader] = [acct(), acct()];
  await f.follow(reader, author);
  await f.feed(reader);
  await f.drain();
  const first = [];
  for (let i = 0; i < 4; i++) first.push(await f.post(author, `p${i}`));
  await f.drain();
  const page1 = await f.feed(reader, "?limit=2");
  const fresh = await f.post(author, "arrived between pages");
  await f.drain();
  const page2 = await f.feed(reader, `?limit=2&cursor=${page1.body.nextCursor}`);
  assert.deepEqual([...idsOf(page1.body), ...idsOf(page2.body)], first.slice().reverse());
  const newer = await f.feed(reader, `?cursor=${page1.body.newerCursor}`);
  assert.deepEqual(idsOf(newer.body), [fresh]);
});

test("FD-08 push-active: between the thresholds only followers active in the last N days get the id", async () => {
  const author = acct();
  const active = [acct(), acct()];
  const idle = [acct(), acct(), acct()];
  for (const r of [...active, ...idle]) {
    await f.follow(r, author); // 5 followers: above 3 (push), at most 6 (push-active)
    await f.feed(r); // every list exists…
  }
  // …but the idle ones last opened the app 30 days ago.
  await f.running.db.query(
    "UPDATE accounts SET last_active_at = now() - interval '30 days' WHERE id = ANY($1::int8[])",
    [idle.map(String)],
  );
  await f.drain();
  const id = await f.post(author, "for the active");
  await f.drain();
  for (const r of active) assert.deepEqual(await listOf(r), [id]);
  for (const r of idle) assert.deepEqual(await listOf(r), []);
});

test("FD-17 a redelivered fan-out event duplicates nothing", async () => {
  const [author, reader] = [acct(), acct()];
  await f.follow(reader, author);
  await f.feed(reader);
  await f.drain();
  const id = await f.post(author, "once");
  await f.drain();
  for (let i = 0; i < 3; i++)
    await f.running.fanout.handle({ kind: "post", actorId: BigInt(author), targetId: BigInt(id) });
  assert.deepEqual(await listOf(reader), [id]);
  assert.deepEqual(idsOf((await f.feed(reader)).body), [id]);
});

test("FD-21 a delete or an edit changes one row: reads filter the deleted id out of the lists and show the new text", async () => {
  const [author, reader] = [acct(), acct()];
  await f.follow(reader, author);
  await f.feed(reader);
  await f.drain();
  const [gone, kept] = [await f.post(author, "oops"), await f.post(author, "draft")];
  await f.drain();
  assert.equal((await f.call("DELETE", `/v1/users/${author}/posts/${gone}`)).status, 204);
  assert.equal((await f.call("PATCH", `/v1/users/${author}/posts/${kept}`, { text: "final" })).status, 200);
  assert.ok((await listOf(reader)).includes(gone), "nobody chased the copy in the list");
  const page = (await f.feed(reader)).body;
  assert.deepEqual(idsOf(page), [kept]);
  assert.equal(page.posts[0]!.text, "final");
  assert.equal((await f.call("DELETE", `/v1/users/${author}/posts/${gone}`)).status, 404);
});

test("FD-21 a repost is another event through the same fan-out", async () => {
  const [author, sharer, reader] = [acct(), acct(), acct()];
  await f.follow(reader, sharer);
  await f.feed(reader);
  await f.drain();
  const original = await f.post(author, "worth sharing");
  const res = await f.call("POST", `/v1/users/${sharer}/reposts`, { postId: original });
  assert.equal(res.status, 201);
  await f.drain();
  const page = (await f.feed(reader)).body;
  assert.equal(page.posts.length, 1);
  assert.equal(page.posts[0]!.kind, "repost");
  assert.equal(page.posts[0]!.repostOf, original);
});

test("FD-23 the home feed answers private, no-store; the author feed is publicly cacheable", async () => {
  const author = acct();
  await f.post(author, "public");
  assert.equal((await f.feed(author)).headers.get("cache-control"), "private, no-store");
  const pub = await f.call("GET", `/v1/users/${author}/posts`);
  assert.match(pub.headers.get("cache-control") ?? "", /^public, max-age=\d+$/);
});

test("a follow merges the followee's recent posts into the list; an unfollow takes them out; mutes and blocks are filtered at read", async () => {
  const [author, other, reader] = [acct(), acct(), acct()];
  const earlier = await f.post(author, "before the follow");
  await f.follow(reader, other);
  await f.feed(reader);
  await f.follow(reader, author);
  await f.drain();
  assert.deepEqual(await listOf(reader), [earlier]);
  const otherPost = await f.post(other, "other");
  await f.drain();
  assert.equal((await f.call("PUT", `/v1/users/${reader}/hidden/${other}`, { kind: "mute" })).status, 204);
  assert.deepEqual(idsOf((await f.feed(reader)).body), [earlier]);
  assert.equal((await f.call("DELETE", `/v1/users/${reader}/hidden/${other}`)).status, 204);
  assert.deepEqual(idsOf((await f.feed(reader)).body), [otherPost, earlier]);
  assert.equal((await f.call("DELETE", `/v1/users/${reader}/following/${author}`)).status, 204);
  await f.drain();
  assert.deepEqual(await listOf(reader), [otherPost]);
});

test("bad input is a 4xx naming the field: a post too long, following yourself, a bad cursor, a bad limit, a bad id", async () => {
  const u = acct();
  const long = await f.call("POST", `/v1/users/${u}/posts`, { text: "x".repeat(501) });
  assert.equal(long.status, 400);
  assert.match(JSON.stringify(long.json), /\/body\/text/);
  const self = await f.call("PUT", `/v1/users/${u}/following/${u}`);
  assert.equal(self.status, 400);
  assert.equal((self.json as { field?: string }).field, "targetId");
  const cursor = await f.call("GET", `/v1/users/${u}/feed?cursor=bm9wZQ`);
  assert.equal(cursor.status, 400);
  assert.equal((cursor.json as { field?: string }).field, "cursor");
  const limit = await f.call("GET", `/v1/users/${u}/feed?limit=1000`);
  assert.equal(limit.status, 400);
  assert.match(JSON.stringify(limit.json), /limit/);
  const id = await f.call("GET", "/v1/users/abc/feed");
  assert.equal(id.status, 400);
  assert.match(JSON.stringify(id.json), /userId/);
  // One past int8's maximum is refused at the edge (it used to reach the database: a 500).
  const huge = await f.call("GET", "/v1/users/9223372036854775808/posts");
  assert.equal(huge.status, 400);
  assert.match(JSON.stringify(huge.json), /userId/);
  assert.equal((await f.call("GET", "/v1/users/9223372036854775807/posts")).status, 200);
  assert.equal((await f.call("POST", `/v1/users/${u}/reposts`, { postId: "999999" })).status, 404);
});

test("ids: the decimal pattern takes exactly 1 to 2^63 − 1", () => {
  const int8 = new RegExp(userIdSchema.pattern);
  for (const ok of ["1", "9", "10", "9223372036854775807", "9223372036854775799", "8999999999999999999"])
    assert.ok(int8.test(ok), ok);
  for (const bad of [
    "0",
    "01",
    "-1",
    "9223372036854775808",
    "9300000000000000000",
    "10000000000000000000",
    "",
  ])
    assert.ok(!int8.test(bad), bad);
  const small = new RegExp(decimalUpToPattern("250"));
  const accepted = Array.from({ length: 400 }, (_, n) => n).filter((n) => small.test(String(n)));
  assert.deepEqual(
    accepted,
    Array.from({ length: 250 }, (_, n) => n + 1),
  );
});

test("FD-04 pull for everyone (every author in the pull tier): the read fetches each followee's recent posts — one query per followee, O(N) — and sorts them", async () => {
  // The same stores, read by a HomeFeed whose thresholds put every author in the pull tier.
  const { timelines, posts, graph } = f.running;
  let queries = 0;
  const pullAll = new HomeFeed({
    timelines,
    posts,
    graph,
    clock: systemClock,
    thresholds: () => ({ fullPushMax: 0, activePushMax: 0 }),
    cap: 128,
    rebuildMaxAgeMs: 86_400_000,
    maxRebuilds: 4,
    newOwner: () => "pull-all",
    celebrityIds: async (author, before, limit) => {
      queries++;
      return (await posts.recentOf(author, { beforeId: before, limit })).map((e) => e.id);
    },
  });
  const reader = acct();
  const authors = [acct(), acct(), acct(), acct()];
  for (const a of authors) await f.follow(reader, a);
  const ids = [];
  for (const a of authors) ids.push(await f.post(a, `from ${a}`));
  const page = await pullAll.read(BigInt(reader), { limit: 50 });
  assert.deepEqual(
    page.posts.map((p) => String(p.id)),
    ids.slice().reverse(),
  );
  assert.equal(queries, authors.length, "one query per followee");
  await f.drain(); // leave the queue empty for the other tests
});

test("FD-22 the ranked feed pages by position in a per-session ranking: every candidate once, a post arriving mid-session shifts nothing, an id cursor does not apply", async () => {
  const [prolific, other, reader] = [acct(), acct(), acct()];
  await f.follow(reader, prolific);
  await f.follow(reader, other);
  await f.feed(reader);
  await f.drain();
  const ids = [];
  ids.push(await f.post(other, "other"));
  for (let i = 0; i < 4; i++) ids.push(await f.post(prolific, `p${i}`));
  await f.drain();
  const first = await f.call("GET", `/v1/users/${reader}/feed/ranked?limit=2`);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("cache-control"), "private, no-store");
  const page1 = first.json as { posts: { id: string }[]; nextCursor: string };
  const late = await f.post(prolific, "mid-session");
  await f.drain();
  const seen = [...idsOf(page1)];
  let cursor: string | null = page1.nextCursor;
  while (cursor) {
    const next = (await f.call("GET", `/v1/users/${reader}/feed/ranked?limit=2&cursor=${cursor}`)).json as {
      posts: { id: string }[];
      nextCursor: string | null;
    };
    seen.push(...idsOf(next));
    cursor = next.nextCursor;
  }
  assert.deepEqual(
    [...seen].sort(),
    [...ids].sort(),
    "each candidate exactly once; the late post waits for a new session",
  );
  assert.ok(!seen.includes(late));
  assert.ok(seen.indexOf(ids[0]!) < 4, "diversity lets the other author above the prolific one's 4th post");
  const idCursor = (await f.feed(reader, "?limit=1")).body.nextCursor!;
  const refused = await f.call("GET", `/v1/users/${reader}/feed/ranked?cursor=${idCursor}`);
  assert.equal(refused.status, 400);
  assert.equal((refused.json as { field?: string }).field, "cursor");
});
