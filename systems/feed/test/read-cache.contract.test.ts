/**
 * The warm read's caches beside the lists (issue 20), on both engines (the twin rule): post
 * bodies (FD-21: edits and deletes win over any fill, whatever the interleaving), pulled
 * authors' recent ids (FD-13: a fill never hides a post made during its read) and readers'
 * views (a follow, mute or tier crossing during a fill's read is never hidden by it). The
 * database is a fake whose reads a test can interleave with writes — the races made exact.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { Post, ReaderView, TimelineEntry } from "../src/domain/ports.ts";
import { toPostJson } from "../src/domain/post-json.ts";
import { CelebrityLists } from "../src/store/celebrity-lists.ts";
import { decodeBodyJson, encodeBody, PostCache, type PostRows } from "../src/store/post-cache.ts";
import { type CachedRow, entryOf } from "../src/store/post-store.ts";
import { ReaderViews } from "../src/store/reader-views.ts";
import { inProcessTimelines, redisTimelines, type TimelineHarness } from "./timeline-backends.ts";

const T0 = Date.UTC(2026, 0, 1);
const pid = (n: number): bigint => snowflakeFloor(T0 + n);
let nextId = 5_000;
const fresh = () => nextId++;

const postOf = (id: bigint, text: string, authorId = 7n): Post => ({
  id,
  authorId,
  kind: "post",
  text,
  repostOf: null,
  createdAtMs: T0,
  editedAtMs: null,
});

/** The post store as the cache sees it: rows in a map; `during` runs inside the next read (the race). */
function fakeRows() {
  const rows = new Map<bigint, CachedRow>();
  let reads = 0;
  let during: (() => Promise<void>) | undefined;
  const store: PostRows = {
    cachedRows: async (ids) => {
      reads++;
      const seen = new Map(ids.filter((id) => rows.has(id)).map((id) => [id, rows.get(id)!]));
      const race = during;
      during = undefined;
      await race?.();
      return seen;
    },
    postsByIds: async (ids) =>
      new Map(ids.flatMap((id) => (rows.get(id)?.post ? [[id, rows.get(id)!.post!] as const] : []))),
    recentOf: async () => [],
    pullForRebuild: async () => [],
  };
  return {
    store,
    rows,
    reads: () => reads,
    /** Runs `race` after the next read took its snapshot, before the read returns. */
    raceNextRead: (race: () => Promise<void>) => {
      during = race;
    },
  };
}

/**
 * An edit's marker lives 30 s: steps that need it alive are a few round trips, and on a loaded
 * host they outlived a 600 ms one. A test of its expiry sets a short one (SHORT_MARKER_MS) and
 * waits that out (real time on Redis).
 */
const MARKER_MS = 30_000;
const SHORT_MARKER_MS = 100;
const cacheOf = (h: TimelineHarness, rows: PostRows, runner = 0, markerMs = MARKER_MS) =>
  new PostCache(h.runners[runner as 0 | 1], rows, {
    ttlMs: 60_000,
    markerMs,
    leaseMs: 10_000,
  });

const textOf = async (cache: PostCache, id: bigint) => (await cache.postsByIds([id])).get(id)?.text;

contractSuite("read caches", [inProcessTimelines, redisTimelines], (it) => {
  it("FD-21 an edit racing a read that refills the cache: the edit's body wins, and the next read needs no database", async (h) => {
    const db = fakeRows();
    const [reader, editor] = [cacheOf(h, db.store, 0), cacheOf(h, db.store, 1)];
    const id = pid(fresh());
    db.rows.set(id, { version: 0, post: postOf(id, "old") });
    // The read misses and snapshots "old"; the whole edit commits and writes before it fills.
    db.raceNextRead(async () => {
      await editor.beginChange(id);
      db.rows.set(id, { version: 1, post: postOf(id, "new") });
      await editor.changed(id, 1, postOf(id, "new"));
    });
    assert.equal(await textOf(reader, id), "old", "a read concurrent with the edit may show either");
    const before = db.reads();
    assert.equal(await textOf(reader, id), "new", "the stale fill did not land");
    assert.equal(db.reads(), before, "served from the cache");
  });

  it("FD-21 edits written out of order: an older version never replaces a newer one", async (h) => {
    const db = fakeRows();
    const cache = cacheOf(h, db.store);
    const id = pid(fresh());
    await cache.changed(id, 2, postOf(id, "second"));
    await cache.changed(id, 1, postOf(id, "first"));
    assert.equal(await textOf(cache, id), "second");
    assert.equal(db.reads(), 0);
  });

  it("FD-21 a deleted post never shows: its tombstone is cached, and a fill racing the delete cannot bring it back", async (h) => {
    const db = fakeRows();
    const [reader, deleter] = [cacheOf(h, db.store, 0), cacheOf(h, db.store, 1)];
    const id = pid(fresh());
    db.rows.set(id, { version: 0, post: postOf(id, "doomed") });
    db.raceNextRead(async () => {
      await deleter.beginChange(id);
      db.rows.set(id, { version: 1, post: null });
      await deleter.changed(id, 1, null);
    });
    await reader.postsByIds([id]);
    const before = db.reads();
    for (let i = 0; i < 3; i++) assert.equal((await reader.postsByIds([id])).has(id), false);
    assert.equal(db.reads(), before, "the tombstone answers, not the database");
    // Never cached before its delete: the delete writes the tombstone anyway.
    const other = pid(fresh());
    db.rows.set(other, { version: 1, post: null });
    await deleter.changed(other, 1, null);
    assert.equal((await reader.postsByIds([other])).has(other), false);
    assert.equal(db.reads(), before);
  });

  it("FD-21 an edit whose write after the commit is lost: reads ask the database while its marker lives, then fill the new body", async (h) => {
    const db = fakeRows();
    const cache = cacheOf(h, db.store);
    const id = pid(fresh());
    db.rows.set(id, { version: 0, post: postOf(id, "old") });
    assert.equal(await textOf(cache, id), "old");
    await cache.beginChange(id);
    db.rows.set(id, { version: 1, post: postOf(id, "new") }); // committed; `changed` never comes
    const before = db.reads();
    assert.equal(await textOf(cache, id), "new");
    assert.equal(await textOf(cache, id), "new");
    assert.equal(db.reads(), before + 2, "no fill while the marker lives");
    // Its expiry: the marker set again, short-lived. The one above lives 30 s, so a read
    // below fills only if this one's PX replaced it and ran out.
    await cacheOf(h, db.store, 0, SHORT_MARKER_MS).beginChange(id);
    await h.passMs(SHORT_MARKER_MS + 50);
    assert.equal(await textOf(cache, id), "new");
    assert.equal(await textOf(cache, id), "new");
    assert.equal(db.reads(), before + 3, "filled once the marker expired");
  });

  it("FD-21 the body evicted while a miss reads the database: the fill lost its lease and is refused, so it cannot bring back what an edit replaced", async (h) => {
    const db = fakeRows();
    const [reader, editor] = [cacheOf(h, db.store, 0), cacheOf(h, db.store, 1)];
    const id = pid(fresh());
    db.rows.set(id, { version: 0, post: postOf(id, "old") });
    db.raceNextRead(async () => {
      await editor.beginChange(id);
      db.rows.set(id, { version: 1, post: postOf(id, "new") });
      await editor.changed(id, 1, postOf(id, "new"));
      await h.forgetKey(`pa:{${id}}`); // evicted (maxmemory) or expired right after the edit's write
    });
    assert.equal(await textOf(reader, id), "old", "concurrent with the edit");
    assert.equal(await textOf(reader, id), "new", "the stale fill found no lease of its own");
    assert.equal(await textOf(reader, id), "new");
    assert.equal(db.reads(), 2, "the second read filled");
  });

  it("FD-21 two readers miss at once: one lease, one fill; the other reads the database without filling", async (h) => {
    const db = fakeRows();
    const [a, b] = [cacheOf(h, db.store, 0), cacheOf(h, db.store, 1)];
    const id = pid(fresh());
    db.rows.set(id, { version: 0, post: postOf(id, "x") });
    db.raceNextRead(async () => {
      assert.equal(await textOf(b, id), "x", "b sees a's lease: asks the database");
    });
    assert.equal(await textOf(a, id), "x");
    const before = db.reads();
    assert.equal(await textOf(b, id), "x");
    assert.equal(db.reads(), before, "a's fill landed");
  });

  it("FD-13 a pulled author's ids: a post made while a miss reads the database is never hidden by the fill; later posts are written through", async (h) => {
    const author = BigInt(fresh());
    const posts: TimelineEntry[] = [entryOf(pid(fresh()))];
    let reads = 0;
    let during: (() => Promise<void>) | undefined;
    const index = {
      recentOf: async (_a: bigint, range: { beforeId?: bigint; limit: number }) => {
        reads++;
        const seen = posts
          .filter((e) => range.beforeId === undefined || e.id < range.beforeId)
          .sort((a, b) => (a.id > b.id ? -1 : 1))
          .slice(0, range.limit);
        const race = during;
        during = undefined;
        await race?.();
        return seen;
      },
    };
    const lists = new CelebrityLists(h.runners[0], index, { window: 10, ttlMs: 60_000 });
    const writer = new CelebrityLists(h.runners[1], index, { window: 10, ttlMs: 60_000 });
    const racing = entryOf(pid(fresh()));
    during = async () => {
      posts.push(racing);
      await writer.add(author, racing);
    };
    assert.deepEqual(await lists.ids(author, undefined, 5), [posts[0]!.id], "read before the post");
    assert.deepEqual(
      await lists.ids(author, undefined, 5),
      [racing.id, posts[0]!.id],
      "the fill was refused",
    );
    assert.equal(reads, 2);
    const later = entryOf(pid(fresh()));
    posts.push(later);
    await writer.add(author, later);
    await writer.add(author, later); // the fan-out's redelivery: one entry (FD-17)
    assert.deepEqual(await lists.ids(author, undefined, 5), [later.id, racing.id, posts[0]!.id]);
    assert.deepEqual(await lists.ids(author, later.id, 5), [racing.id, posts[0]!.id], "below a cursor");
    assert.equal(reads, 2, "written through: no database read");
  });

  it("FD-13 a pulled author's cached ids hold the newest `window`; a page below them asks the author index, and so does a list that outgrew its window", async (h) => {
    const author = BigInt(fresh());
    const posts = [1, 2, 3, 4, 5].map(() => entryOf(pid(fresh()))).reverse(); // newest first
    let reads = 0;
    const index = {
      recentOf: async (_a: bigint, range: { beforeId?: bigint; limit: number }) => {
        reads++;
        return posts
          .filter((e) => range.beforeId === undefined || e.id < range.beforeId)
          .slice(0, range.limit);
      },
    };
    const lists = new CelebrityLists(h.runners[0], index, { window: 3, ttlMs: 60_000 });
    const ids = posts.map((e) => e.id);
    assert.deepEqual(await lists.ids(author, undefined, 2), ids.slice(0, 2));
    assert.deepEqual(await lists.ids(author, undefined, 3), ids.slice(0, 3));
    assert.equal(reads, 1, "filled with the newest 3");
    assert.deepEqual(await lists.ids(author, ids[1], 3), ids.slice(2, 5), "below the window: the index");
    assert.equal(reads, 2);
    // A small author's complete list (fewer posts than the window) answers any page itself.
    const small = BigInt(fresh());
    const few = [entryOf(pid(fresh()))];
    const smallIndex = {
      recentOf: async (_a: bigint, range: { beforeId?: bigint; limit: number }) => {
        reads++;
        return few.filter((e) => range.beforeId === undefined || e.id < range.beforeId).slice(0, range.limit);
      },
    };
    const smallLists = new CelebrityLists(h.runners[0], smallIndex, { window: 3, ttlMs: 60_000 });
    await smallLists.ids(small, undefined, 3);
    const before = reads;
    assert.deepEqual(await smallLists.ids(small, undefined, 3), [few[0]!.id]);
    assert.deepEqual(await smallLists.ids(small, few[0]!.id, 3), [], "nothing older exists: no index read");
    for (let i = 0; i < 3; i++) {
      const e = entryOf(pid(fresh()));
      few.unshift(e);
      await smallLists.add(small, e);
    }
    assert.equal(reads, before);
    assert.deepEqual(
      await smallLists.ids(small, few[2]!.id, 3),
      [few[3]!.id],
      "outgrew its window: the index",
    );
    assert.equal(reads, before + 1);
  });

  it("FD-13 FD-08 a reader's view: a follow or mute during a miss's graph read is never hidden by the fill; a tier crossing drops every view", async (h) => {
    const reader = BigInt(fresh());
    const other = BigInt(fresh());
    let view: ReaderView = { pulled: [1n], hidden: new Set() };
    let reads = 0;
    let during: (() => Promise<void>) | undefined;
    const graph = {
      readerView: async () => {
        reads++;
        const seen = { pulled: [...view.pulled], hidden: new Set(view.hidden) };
        const race = during;
        during = undefined;
        await race?.();
        return seen;
      },
    };
    const views = new ReaderViews(h.runners[0], graph, { ttlMs: 60_000 });
    const writer = new ReaderViews(h.runners[1], graph, { ttlMs: 60_000 });
    during = async () => {
      view = { pulled: [1n, 2n], hidden: new Set([9n]) };
      await writer.invalidate(reader);
    };
    assert.deepEqual((await views.readerView(reader, 100)).pulled, [1n]);
    const now = await views.readerView(reader, 100);
    assert.deepEqual([now.pulled, [...now.hidden]], [[1n, 2n], [9n]], "the stale fill was refused");
    await views.readerView(reader, 100);
    assert.equal(reads, 2, "cached once filled");
    await views.readerView(other, 100);
    assert.equal(reads, 3);
    await writer.bumpEpoch(); // an author crossed the line
    await views.readerView(reader, 100);
    await views.readerView(other, 100);
    assert.equal(reads, 5, "every view was dropped");
    await views.readerView(reader, 200);
    assert.equal(reads, 6, "a view made at another line is not used");
  });
});

test("a cached body is the API's post byte for byte (a warm page sends it as it is) and decodes back to the post: any text, reposts, edits", () => {
  const texts = [
    "plain",
    'quotes " and \\ backslash',
    "line\nbreak\ttab",
    "\u2028 \u0000 é 🎉",
    ',"createdAt":"x","editedAt":null}',
  ];
  const posts: Post[] = [
    ...texts.map((text, i) => ({
      ...postOf(pid(i), text),
      editedAtMs: i % 2 === 0 ? null : T0 + 86_400_123,
    })),
    {
      id: pid(9),
      authorId: 3n,
      kind: "repost",
      text: null,
      repostOf: pid(1),
      createdAtMs: T0 + 1,
      editedAtMs: null,
    },
  ];
  for (const post of posts) {
    const json = /^\d+\|\d+\|(.*)$/s.exec(encodeBody({ version: 2, post }))![1]!;
    assert.equal(json, JSON.stringify(toPostJson(post)), String(post.text));
    assert.deepEqual(decodeBodyJson(json), post);
  }
});
