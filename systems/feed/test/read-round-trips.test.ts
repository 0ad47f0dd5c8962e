/**
 * What one home-feed read costs the database once warm (issue 20's read path): the key checked
 * from the key cache, the pulled followees and the hidden authors in one graph query, the
 * celebrity ids from their cache, the page's content in one batch — two round trips, where the
 * first slice made four (the key, the pulled followees, the hidden authors, the content).
 * Counted on the service's own database handle, end to end over HTTP.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type FeedFixture, openFeed } from "./feed-fixture.ts";

let f: FeedFixture;
before(async () => {
  // The celebrity cache on (the fixture turns it off): its TTL outlives the test.
  f = await openFeed({ FEED_CELEBRITY_CACHE_TTL_MS: "60000" });
});
after(async () => {
  await f?.close();
});

/** Counts the queries the service sends through its database handle while `body` runs. */
async function countQueries(body: () => Promise<void>): Promise<string[]> {
  const db = f.running.db;
  const original = db.query;
  const seen: string[] = [];
  db.query = ((text: string, ...rest: unknown[]) => {
    seen.push(text.replace(/\s+/g, " ").trim().slice(0, 60));
    return (original as (...a: unknown[]) => unknown).call(db, text, ...rest);
  }) as typeof db.query;
  try {
    await body();
  } finally {
    db.query = original;
  }
  return seen;
}

test("FD-13 FD-14 a warm home-feed read is two database round trips: one graph query (pulled followees and hidden authors), one content batch", async () => {
  const [reader, celebrity, friend, muted] = [10, 20, 30, 40];
  for (let fan = 1_000; fan < 1_007; fan++) await f.follow(fan, celebrity); // 8 followers > 6: pulled
  for (const target of [celebrity, friend, muted]) await f.follow(reader, target);
  assert.equal((await f.call("PUT", `/v1/users/${reader}/hidden/${muted}`, { kind: "mute" })).status, 204);
  const posts = [
    await f.post(celebrity, "star"),
    await f.post(friend, "friend"),
    await f.post(muted, "muted"),
  ];
  await f.drain();
  // The first read rebuilds the list by pull and fills the key and celebrity caches.
  const warm = await f.feed(reader);
  assert.equal(warm.status, 200);
  assert.deepEqual(
    warm.body.posts.map((p) => p.id),
    [posts[1], posts[0]],
    "the friend's post from the list, the celebrity's pulled; the muted author filtered",
  );
  let read: Awaited<ReturnType<FeedFixture["feed"]>> | undefined;
  const queries = await countQueries(async () => {
    read = await f.feed(reader);
  });
  assert.deepEqual(read?.body.posts, warm.body.posts);
  assert.equal(queries.length, 2, `queries: ${JSON.stringify(queries)}`);
  assert.match(queries[0]!, /^\(SELECT f.followee_id AS id, false AS hidden/);
  assert.match(queries[1]!, /FROM posts WHERE id = ANY/);
});
