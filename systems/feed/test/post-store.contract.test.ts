/**
 * The post store and the graph on both SQL engines (PGlite in memory, PostgreSQL in a fresh
 * schema): FD-09's one transaction (post + event), FD-16's follower pages by keyset on the
 * (followee, follower) key, FD-21's one-row delete and edit, FD-13's author index, FD-20's
 * bounded pull.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { fanoutOutbox } from "../src/store/fanout-outbox.ts";
import { GraphStore } from "../src/store/graph-store.ts";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import { seedGraph } from "../src/store/seed-graph.ts";

const NOW = Date.UTC(2026, 5, 1);
const pid = (atMs: number, seq = 0) => snowflakeFloor(atMs) + BigInt(seq);
let next = 10n;
const acct = () => next++;

interface Stores {
  db: Database;
  posts: PostStore;
  graph: GraphStore;
}

contractSuite(
  "post and graph stores",
  sqlBackends<Stores>({
    system: "feed",
    prefix: "feed",
    prepare: migrateFeed,
    subject: (db) => ({ db, posts: new PostStore(db), graph: new GraphStore(db) }),
  }),
  (it) => {
    it("FD-09 the post and its fan-out event commit together; a failed post leaves no event", async ({
      db,
      posts,
    }) => {
      const author = acct();
      const before = (await fanoutOutbox.lag(db, NOW)).unpublished;
      await posts.create({ id: pid(NOW), authorId: author, text: "hi", nowMs: NOW });
      assert.equal((await fanoutOutbox.lag(db, NOW)).unpublished, before + 1n);
      // The same id again violates the key: the transaction rolls back, event included.
      await assert.rejects(posts.create({ id: pid(NOW), authorId: author, text: "again", nowMs: NOW }));
      assert.equal((await fanoutOutbox.lag(db, NOW)).unpublished, before + 1n);
    });

    it("FD-21 delete and edit change one row; reads by id and by author skip deleted posts", async ({
      posts,
    }) => {
      const author = acct();
      const [a, b] = [pid(NOW + 1), pid(NOW + 2)];
      await posts.create({ id: a, authorId: author, text: "a", nowMs: NOW });
      await posts.create({ id: b, authorId: author, text: "b", nowMs: NOW });
      assert.equal(await posts.delete(author, a, NOW), 1, "the row's version after the delete");
      assert.equal(await posts.delete(author, a, NOW), undefined);
      const edited = await posts.edit(author, b, "b2", NOW + 5);
      assert.equal(edited?.text, "b2");
      assert.equal(edited?.version, 1, "every edit bumps the row's version");
      assert.equal((await posts.edit(author, b, "b3", NOW + 6))?.version, 2);
      const cached = await posts.cachedRows([a, b]);
      assert.deepEqual(cached.get(a), { version: 1, post: null }, "the body cache sees deleted rows");
      assert.equal(cached.get(b)?.post?.text, "b3");
      assert.deepEqual([...(await posts.postsByIds([a, b])).keys()], [b]);
      assert.deepEqual(
        (await posts.recentOf(author, { limit: 10 })).map((e) => e.id),
        [b],
      );
      assert.equal(await posts.edit(acct(), b, "not yours", NOW), undefined, "keyed by author");
    });

    it("FD-16 followers are read page by page on the (followee, follower) key; follower counts move with the edges; the active filter", async ({
      db,
      graph,
    }) => {
      const star = acct();
      const fans = [acct(), acct(), acct(), acct(), acct()];
      for (const [i, fan] of fans.entries())
        assert.equal(await graph.follow(fan, star, { nowMs: NOW, eventId: `f:${star}:${fan}` }), i + 1);
      assert.equal(
        await graph.follow(fans[0]!, star, { nowMs: NOW, eventId: `f2:${star}` }),
        undefined,
        "a repeated follow is no new edge",
      );
      assert.equal(await graph.followerCount(star), 5);
      const page1 = await graph.followersPage(star, { afterId: 0n, limit: 2 });
      const page2 = await graph.followersPage(star, { afterId: page1.at(-1)!, limit: 2 });
      const page3 = await graph.followersPage(star, { afterId: page2.at(-1)!, limit: 2 });
      assert.deepEqual([...page1, ...page2, ...page3], fans);
      await graph.touchActive(fans[1]!, NOW);
      assert.deepEqual(
        await graph.followersPage(star, { afterId: 0n, limit: 10, activeSinceMs: NOW - 1_000 }),
        [fans[1]],
      );
      assert.equal(await graph.unfollow(fans[0]!, star, { nowMs: NOW, eventId: `u:${star}` }), 4);
      assert.equal(await graph.followerCount(star), 4);
      const { rows } = await db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM fanout_events WHERE event_id LIKE $1",
        [`%:${star}%`],
      );
      assert.equal(rows[0]!.n, 6n, "5 follows and 1 unfollow, each with its event");
    });

    it("FD-13 FD-20 pulled followees by follower count (with the hidden authors, one query); a rebuild's pull is bounded by count and age", async ({
      posts,
      graph,
    }) => {
      const [reader, star, friend] = [acct(), acct(), acct()];
      await graph.follow(reader, star, { nowMs: NOW, eventId: `a:${reader}:${star}` });
      await graph.follow(reader, friend, { nowMs: NOW, eventId: `a:${reader}:${friend}` });
      for (let i = 0; i < 3; i++) await graph.follow(acct(), star, { nowMs: NOW, eventId: `b:${star}:${i}` });
      await graph.hide(reader, friend, "mute");
      // One round trip answers both: the followee above the line, and the muted author.
      assert.deepEqual(await graph.readerView(reader, 2), { pulled: [star], hidden: new Set([friend]) });
      // A capacity configured high puts the line past int4 (the follower count's type): nobody pulled, no error.
      assert.deepEqual(await graph.readerView(reader, 1_200_000_000_000), {
        pulled: [],
        hidden: new Set([friend]),
      });
      await graph.unhide(reader, friend);
      assert.deepEqual((await graph.readerView(reader, 2)).hidden, new Set());
      const old = pid(NOW - 200 * 86_400_000);
      await posts.create({ id: old, authorId: friend, text: "old", nowMs: NOW });
      const recent = [];
      for (let i = 0; i < 4; i++) {
        const id = pid(NOW - 1_000 + i, 1);
        recent.push(id);
        await posts.create({ id, authorId: i % 2 === 0 ? star : friend, text: `r${i}`, nowMs: NOW });
      }
      const pulled = await posts.pullForRebuild(reader, { sinceMs: NOW - 30 * 86_400_000, limit: 3 });
      assert.deepEqual(
        pulled.map((e) => e.id),
        recent.slice().reverse().slice(0, 3),
      );
    });

    it("the seed's power-law graph: the top author is followed by topShare of users, counts match the edges, about activeShare are active", async ({
      db,
    }) => {
      const seeded = await seedGraph(db, {
        users: 2_000,
        topShare: 0.25,
        alpha: 1,
        minFollowers: 5,
        activeShare: 0.3,
        nowMs: NOW,
      });
      assert.equal(seeded.authors, 100);
      const { rows } = await db.query<{ id: bigint; follower_count: number; edges: bigint }>(
        `SELECT a.id, a.follower_count, (SELECT count(*) FROM follows f WHERE f.followee_id = a.id) AS edges
           FROM accounts a WHERE a.id IN (1, 2, 100) ORDER BY a.id`,
      );
      // topShare × users / rank, less one where the spread lands on the author itself (no self-follows).
      const expected = [500, 250, 5];
      for (const [i, r] of rows.entries())
        assert.ok(Math.abs(r.follower_count - expected[i]!) <= 1, `${r.id}: ${r.follower_count}`);
      for (const r of rows) assert.equal(BigInt(r.follower_count), r.edges);
      const active = await db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM accounts WHERE id <= 2000 AND last_active_at IS NOT NULL",
      );
      const share = Number(active.rows[0]!.n) / 2_000;
      assert.ok(share > 0.25 && share < 0.35, String(share));
    });
  },
);
