/**
 * The links API through main() (PGlite): create → redirect (US-01), every bad input a 4xx
 * naming its field with nothing written, get/update/delete, the listing's cursor pages and
 * tags, the warning when a permanent link's target changes, and workspace isolation.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PERMANENT_TARGET_WARNING } from "../src/api/link-routes.ts";
import { type ApiWorld, apiWorld, DOMAIN_A, START_MS } from "./api-fixture.ts";

let world: ApiWorld;
let key = "";
let otherKey = "";
before(async () => {
  world = await apiWorld();
  key = await world.workspace("acme");
  otherKey = await world.workspace("globex");
});
after(() => world?.close());

const create = (body: unknown, k = key) => world.request("POST", "/v1/links", { key: k, body });

async function linkCount(): Promise<number> {
  const { rows } = await world.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM links");
  return rows[0]!.n;
}

test("US-01 a long URL goes in, a 7-character code comes out; GET /{code} answers 302 with Location, never the page", async () => {
  const long = `https://example.com/articles/${"x".repeat(300)}?ref=mail`;
  const made = await create({ url: long });
  assert.equal(made.status, 201, made.body);
  assert.match(made.json.code, /^[A-Za-z0-9]{7}$/);
  assert.equal(made.json.shortUrl, `http://${DOMAIN_A}/${made.json.code}`);
  assert.equal(made.json.domain, DOMAIN_A);
  const hop = await world.request("GET", `/${made.json.code}`);
  assert.equal(hop.status, 302);
  assert.equal(hop.headers.location, long);
  assert.equal(hop.body, "", "the redirect carries no page: the browser makes a second request to Location");
});

test("bad input is a 4xx naming the field, and nothing is written", async () => {
  const before = await linkCount();
  const cases: [unknown, string][] = [
    [{ url: "example.com/a" }, "url"],
    [{ url: `https://example.com/${"a".repeat(10_000)}` }, "url"],
    [{ url: "javascript:alert(1)" }, "url"],
    [{ url: "ftp://example.com/file" }, "url"],
    [{ url: "https://example.com", alias: "bad alias!" }, "alias"],
    [{ url: "https://example.com", alias: "abcdefg" }, "alias"],
    [{ url: "https://example.com", expiresAt: new Date(START_MS - 1_000).toISOString() }, "expiresAt"],
    [{ url: "https://example.com", domain: "elsewhere.test" }, "domain"],
    [{ url: "https://example.com", status: 303 }, "status"],
    [{ url: "https://example.com", tags: ["Bad Tag"] }, "tags"],
    [{ url: 42 }, "url"],
  ];
  for (const [body, field] of cases) {
    const res = await create(body);
    assert.ok(res.status >= 400 && res.status < 500, `${JSON.stringify(body)} → ${res.status}`);
    const named = res.json.field ?? res.json.errors?.map((e: { field: string }) => e.field).join(",");
    assert.ok(
      String(named).includes(field),
      `${JSON.stringify(body).slice(0, 80)}: names ${named}, not ${field}`,
    );
  }
  assert.equal(await linkCount(), before);
});

test("get, update and delete a link; a permanent link's target change comes with a warning", async () => {
  const made = await create({ url: "https://example.com/old", status: 301, tags: ["launch"] });
  const path = `/v1/links/${DOMAIN_A}/${made.json.code}`;
  assert.equal((await world.request("GET", path, { key })).json.url, "https://example.com/old");
  const changed = await world.request("PATCH", path, { key, body: { url: "https://example.com/new" } });
  assert.equal(changed.status, 200, changed.body);
  assert.deepEqual(changed.json.warnings, [PERMANENT_TARGET_WARNING]);
  assert.equal(
    (await world.request("GET", `/${made.json.code}`)).headers.location,
    "https://example.com/new",
  );
  const toTemporary = await world.request("PATCH", path, { key, body: { status: 302 } });
  assert.deepEqual(toTemporary.json.warnings, []);
  const quiet = await world.request("PATCH", path, { key, body: { url: "https://example.com/newer" } });
  assert.deepEqual(quiet.json.warnings, [], "a 302 link's target may change without a warning");
  assert.equal((await world.request("DELETE", path, { key })).status, 204);
  assert.equal((await world.request("GET", path, { key })).status, 404);
  assert.equal((await world.request("GET", `/${made.json.code}`)).status, 404);
});

test("another workspace's link reads as 404, and its key cannot change it", async () => {
  const made = await create({ url: "https://example.com/private" });
  const path = `/v1/links/${DOMAIN_A}/${made.json.code}`;
  assert.equal((await world.request("GET", path, { key: otherKey })).status, 404);
  assert.equal(
    (await world.request("PATCH", path, { key: otherKey, body: { url: "https://x.test/" } })).status,
    404,
  );
  assert.equal((await world.request("DELETE", path, { key: otherKey })).status, 404);
  assert.equal((await world.request("GET", path, { key })).status, 200);
});

test("no key is 401 AUTH_MISSING, a wrong key 401 AUTH_INVALID; redirects need none", async () => {
  assert.equal(
    (await world.request("POST", "/v1/links", { body: { url: "https://example.com" } })).json.code,
    "AUTH_MISSING",
  );
  const wrong = await world.request("GET", "/v1/links", { key: "usk_0000000000000000_x" });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.json.code, "AUTH_INVALID");
});

test("the listing pages with a cursor, newest first, filtered by tag; a forged cursor is a 400", async () => {
  const listKey = await world.workspace("lister");
  const made: string[] = [];
  for (let i = 0; i < 7; i++) {
    world.clock.advance(1_000);
    const res = await create({ url: `https://example.com/${i}`, tags: i % 2 === 0 ? ["even"] : [] }, listKey);
    made.push(res.json.code);
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const url: string = `/v1/links?limit=3${cursor ? `&cursor=${cursor}` : ""}`;
    const res = await world.request("GET", url, { key: listKey });
    assert.equal(res.status, 200, res.body);
    seen.push(...res.json.links.map((l: { code: string }) => l.code));
    cursor = res.json.nextCursor;
    if (cursor === null) break;
  }
  assert.deepEqual(seen, [...made].reverse());
  const even = await world.request("GET", "/v1/links?tag=even", { key: listKey });
  assert.deepEqual(
    even.json.links.map((l: { code: string }) => l.code),
    [made[6], made[4], made[2], made[0]],
  );
  const forged = await world.request("GET", "/v1/links?cursor=bm90LWEtY3Vyc29y", { key: listKey });
  assert.equal(forged.status, 400);
  assert.equal(forged.json.code, "LINK_CURSOR_INVALID");
});

test("Idempotency-Key on create: a retry gets the first link back (no second link), another body with the key is 422, a bad key is 400 naming the header, a refusal stores nothing", async () => {
  const headers = { "idempotency-key": "create-7f3a" };
  const first = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://example.com/once" },
    headers,
  });
  assert.equal(first.status, 201, first.body);
  const count = await linkCount();
  const retry = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://example.com/once" },
    headers,
  });
  assert.equal(retry.status, 201);
  assert.equal(retry.body, first.body, "the stored answer, byte for byte");
  assert.equal(await linkCount(), count, "no second link");
  // Another workspace's key space is its own.
  const other = await world.request("POST", "/v1/links", {
    key: otherKey,
    body: { url: "https://example.com/once" },
    headers,
  });
  assert.equal(other.status, 201);
  assert.notEqual(other.json.code, first.json.code);
  const mismatch = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://example.com/two" },
    headers,
  });
  assert.equal(mismatch.status, 422, mismatch.body);
  assert.equal(mismatch.json.code, "URL_SHORTENER_IDEMPOTENCY_MISMATCH");
  const bad = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://example.com/x" },
    headers: { "idempotency-key": "with space" },
  });
  assert.equal(bad.status, 400);
  assert.match(bad.body, /idempotency-key/);
  // A refused create (a bad field) releases the key: fixed and retried with it, it is made.
  const refusedKey = { "idempotency-key": "create-refused" };
  const refused = await world.request("POST", "/v1/links", {
    key,
    body: { url: "ftp://x.test/" },
    headers: refusedKey,
  });
  assert.equal(refused.status, 400);
  const fixed = await world.request("POST", "/v1/links", {
    key,
    body: { url: "ftp://x.test/" },
    headers: refusedKey,
  });
  assert.equal(fixed.status, 400, "the same bad body is refused again, not replayed from a stored answer");
  assert.equal(await linkCount(), count + 1);
});
