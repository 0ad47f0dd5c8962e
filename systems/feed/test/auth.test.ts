/**
 * Issue 20: who acts. API keys per user (kit's scheme, infra's key table and bearer hook):
 * every write and the home feed need the key of the user in the path — none or a wrong one is
 * 401, another user's is 403 naming `userId`, and a refused request writes nothing; author
 * feeds stay public. Keys are stored hashed; the operator's admin API and `casebook feed
 * new-key` issue them. POST posts takes an Idempotency-Key (the shared rule): the same key and
 * body give the first answer, another body is 422.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import { runApiKeyTool } from "@casebook/infra/http/api-key-tool";
import { feedKeyTool } from "../src/tools/new-key.ts";
import { type FeedFixture, openFeed } from "./feed-fixture.ts";

const ADMIN_TOKEN = "feed-admin-token-for-tests";
let f: FeedFixture;
before(async () => {
  f = await openFeed({ FEED_ADMIN_TOKEN: ADMIN_TOKEN });
});
after(async () => {
  await f?.close();
});

type Problem = { code: string; status: number; field?: string; errors?: { field: string }[] };
const problem = (res: { json: unknown }) => res.json as Problem;
const postsOf = async (userId: number) =>
  ((await f.call("GET", `/v1/users/${userId}/posts`, undefined, { as: null })).json as { posts: unknown[] })
    .posts.length;

test("no key, or a wrong one, is 401 on every write and on the home feed, with the RFC 6750 challenge; nothing is written", async () => {
  const [me, other] = [201, 202];
  await f.keyOf(me);
  const writes: [string, string, unknown][] = [
    ["POST", `/v1/users/${me}/posts`, { text: "hi" }],
    ["POST", `/v1/users/${me}/reposts`, { postId: "1" }],
    ["PATCH", `/v1/users/${me}/posts/1`, { text: "x" }],
    ["DELETE", `/v1/users/${me}/posts/1`, undefined],
    ["PUT", `/v1/users/${me}/following/${other}`, undefined],
    ["DELETE", `/v1/users/${me}/following/${other}`, undefined],
    ["PUT", `/v1/users/${me}/hidden/${other}`, { kind: "mute" }],
    ["GET", `/v1/users/${me}/feed`, undefined],
    ["GET", `/v1/users/${me}/feed/ranked`, undefined],
  ];
  const wrong = `fdk_0123456789abcdef_${"A".repeat(43)}`;
  for (const [method, path, body] of writes) {
    const none = await f.call(method, path, body, { as: null });
    assert.equal(none.status, 401, `${method} ${path} without a key`);
    assert.equal(problem(none).code, "AUTH_MISSING");
    assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="feed"');
    const bad = await f.call(method, path, body, { as: null, headers: { authorization: `Bearer ${wrong}` } });
    assert.equal(bad.status, 401, `${method} ${path} with a wrong key`);
    assert.equal(problem(bad).code, "AUTH_INVALID");
    assert.match(bad.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  }
  assert.equal(await postsOf(me), 0);
  assert.equal(await f.running.graph.isFollowing(BigInt(me), BigInt(other)), false);
});

test("another user's key is 403 naming userId: it cannot post, follow or read that user's home feed; the author feed stays public", async () => {
  const [alice, bob] = [211, 212];
  await f.post(alice, "alice's own");
  const asBob = { as: bob };
  const post = await f.call("POST", `/v1/users/${alice}/posts`, { text: "forged" }, asBob);
  assert.equal(post.status, 403);
  assert.equal(problem(post).code, "FEED_FORBIDDEN");
  assert.equal(problem(post).field, "userId");
  const follow = await f.call("PUT", `/v1/users/${alice}/following/${bob}`, undefined, asBob);
  assert.equal(follow.status, 403);
  const feed = await f.call("GET", `/v1/users/${alice}/feed`, undefined, asBob);
  assert.equal(feed.status, 403);
  assert.equal(problem(feed).field, "userId");
  assert.equal((await f.call("GET", `/v1/users/${alice}/feed`)).status, 200, "the owner reads it");
  // The forged post was never written; the public author feed needs no key.
  assert.equal(await postsOf(alice), 1);
  const me = await f.call("GET", "/v1/me", undefined, asBob);
  assert.deepEqual(me.json, { userId: String(bob) });
});

test("keys are stored hashed: the table holds sha256(key) and the public prefix, never the key", async () => {
  const key = await f.keyOf(221);
  const { rows } = await f.running.db.query<Record<string, unknown>>(
    "SELECT * FROM user_api_keys WHERE user_id = 221",
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.key_hash, createHash("sha256").update(key).digest("hex"));
  assert.ok(key.startsWith(`${rows[0]!.prefix}_`));
  assert.ok(
    !JSON.stringify(rows, (_, v) => (typeof v === "bigint" ? String(v) : v)).includes(key.slice(-43)),
  );
});

test("`casebook feed new-key` issues a key through the admin API (the user made if new); a revoked key is 401", async () => {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
  const env = { FEED_ADMIN_TOKEN: ADMIN_TOKEN };
  const code = await runApiKeyTool(feedKeyTool, ["--user", "231", "--url", f.running.url], env, io);
  assert.equal(code, 0, err.join(""));
  const key = out.join("").trim();
  const headers = { authorization: `Bearer ${key}` };
  const made = await f.call("POST", "/v1/users/231/posts", { text: "via new-key" }, { as: null, headers });
  assert.equal(made.status, 201);
  // A second key for the now existing user, then the first one revoked by the operator.
  assert.equal(await runApiKeyTool(feedKeyTool, ["--user", "231", "--url", f.running.url], env, io), 0);
  const prefix = key.split("_").slice(0, 2).join("_");
  const admin = { as: null, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  assert.equal(
    (await f.call("DELETE", `/v1/admin/users/231/api-keys/${prefix}`, undefined, admin)).status,
    204,
  );
  const revoked = await f.call("POST", "/v1/users/231/posts", { text: "after" }, { as: null, headers });
  assert.equal(revoked.status, 401);
  assert.equal((await f.call("POST", "/v1/admin/users", { id: "232" }, { as: null })).status, 401);
  const notAnId = await f.call("GET", "/v1/admin/users/abc/api-keys", undefined, admin);
  assert.equal(notAnId.status, 400, "an owner id that is not a user id is refused before the database");
  assert.equal(problem(notAnId).errors?.[0]?.field, "/params/id");
});

test("Idempotency-Key on POST posts: the same key and body give the first answer (one post); another body is 422; a bad key is 400; keys are per user", async () => {
  const [author, other] = [241, 242];
  const key = { headers: { "idempotency-key": "post-241-a" } };
  const first = await f.call("POST", `/v1/users/${author}/posts`, { text: "once" }, key);
  assert.equal(first.status, 201);
  const again = await f.call("POST", `/v1/users/${author}/posts`, { text: "once" }, key);
  assert.equal(again.status, 201);
  assert.deepEqual(again.json, first.json, "the first answer, byte for byte");
  assert.equal(await postsOf(author), 1);
  const changed = await f.call("POST", `/v1/users/${author}/posts`, { text: "twice" }, key);
  assert.equal(changed.status, 422);
  assert.equal(problem(changed).code, "FEED_IDEMPOTENCY_MISMATCH");
  assert.equal(await postsOf(author), 1);
  const bad = await f.call(
    "POST",
    `/v1/users/${author}/posts`,
    { text: "x" },
    {
      headers: { "idempotency-key": "has space" },
    },
  );
  assert.equal(bad.status, 400);
  assert.equal(problem(bad).errors?.[0]?.field, "/headers/idempotency-key");
  // Another user's same key is another key.
  const theirs = await f.call(
    "POST",
    `/v1/users/${other}/posts`,
    { text: "once" },
    {
      headers: { "idempotency-key": "post-241-a" },
    },
  );
  assert.equal(theirs.status, 201);
  assert.notEqual((theirs.json as { id: string }).id, (first.json as { id: string }).id);
  // One fan-out event per post, however many retries.
  const { rows } = await f.running.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM fanout_events WHERE kind = 'post' AND actor_id = ANY($1::int8[])",
    [[author, other]],
  );
  assert.equal(Number(rows[0]!.n), 2);
});
