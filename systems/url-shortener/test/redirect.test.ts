/**
 * GET /{code} through main() (PGlite, manual clock): the status per link (US-07), the explicit
 * Cache-Control (US-08), a cache lifetime never past the link's life and no redirect once it
 * expired (US-12), query forwarding, several domains each with its own codes, custom aliases
 * (US-18's 409; the cross-process race is alias-race.test.ts), and the 404/410 pages.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LinkRepository } from "../src/store/link-repository.ts";
import { ADMIN_TOKEN, type ApiWorld, apiWorld, DOMAIN_A, DOMAIN_B, START_MS } from "./api-fixture.ts";

let world: ApiWorld;
let key = "";
before(async () => {
  world = await apiWorld();
  key = await world.workspace("acme");
});
after(() => world?.close());

async function create(body: Record<string, unknown>) {
  const res = await world.request("POST", "/v1/links", { key, body });
  assert.equal(res.status, 201, res.body);
  return res.json as { code: string; domain: string };
}

test("US-07 redirects are 302 by default; a link may choose 301, 307 or 308", async () => {
  const temporary = await create({ url: "https://example.com/t" });
  assert.equal((await world.request("GET", `/${temporary.code}`)).status, 302);
  for (const status of [301, 307, 308]) {
    const link = await create({ url: `https://example.com/${status}`, status });
    const hop = await world.request("GET", `/${link.code}`);
    assert.equal(hop.status, status);
    assert.equal(hop.headers.location, `https://example.com/${status}`);
  }
});

test("US-08 the 302 declares Cache-Control: max-age=300 explicitly; a link may set its own lifetime", async () => {
  const link = await create({ url: "https://example.com/cached" });
  assert.equal(
    (await world.request("GET", `/${link.code}`)).headers["cache-control"],
    "max-age=300, stale-if-error=86400",
  );
  const short = await create({ url: "https://example.com/short", cacheMaxAgeS: 30 });
  assert.equal(
    (await world.request("GET", `/${short.code}`)).headers["cache-control"],
    "max-age=30, stale-if-error=86400",
  );
});

test("US-12 the cache lifetime sent never exceeds the link's remaining life, and an expired link is a 410, never its target", async () => {
  const expiresAt = new Date(START_MS + 3_600_000 + 200_000).toISOString();
  world.clock.setWallMs(START_MS + 3_600_000);
  const link = await create({ url: "https://example.com/expiring", expiresAt });
  // 200 s left: max-age 199, not 300 (the second off is the edge's whole-second clock), and no
  // stale-if-error: an edge cut off from the origin must stop at the expiry too.
  assert.equal((await world.request("GET", `/${link.code}`)).headers["cache-control"], "max-age=199");
  const capped = await create({ url: "https://example.com/expiring-60", expiresAt, cacheMaxAgeS: 60 });
  assert.equal(
    (await world.request("GET", `/${capped.code}`)).headers["cache-control"],
    "max-age=60, stale-if-error=139",
    "60 s fresh, then stale on error only for what is left of its life",
  );
  world.clock.setWallMs(START_MS + 3_600_000 + 199_500);
  assert.equal((await world.request("GET", `/${link.code}`)).headers["cache-control"], "max-age=0");
  world.clock.setWallMs(START_MS + 3_600_000 + 200_000);
  const gone = await world.request("GET", `/${link.code}`);
  assert.equal(gone.status, 410);
  assert.equal(gone.headers.location, undefined);
  assert.equal(gone.headers["cache-control"], "no-store");
  // The reaper deletes it (PostgreSQL has no TTL); then the code is unknown.
  assert.equal(await new LinkRepository(world.running.db).reapExpired(world.clock.nowMs(), 100), 2);
  await world.running.reader.forget(DOMAIN_A, link.code);
  assert.equal((await world.request("GET", `/${link.code}`)).status, 404);
  world.clock.setWallMs(START_MS);
});

test("the query string is forwarded to the target, unless the link says not to", async () => {
  const forwarded = await create({ url: "https://example.com/landing?a=1#top" });
  const hop = await world.request("GET", `/${forwarded.code}?utm_source=mail&b=2`);
  assert.equal(hop.headers.location, "https://example.com/landing?a=1&utm_source=mail&b=2#top");
  const kept = await create({ url: "https://example.com/fixed", forwardQuery: false });
  assert.equal(
    (await world.request("GET", `/${kept.code}?x=1`)).headers.location,
    "https://example.com/fixed",
  );
});

test("several domains, each with its own codes: one alias on two domains is two links, chosen by Host", async () => {
  const onA = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://a.example.com/", alias: "spring-sale" },
  });
  const onB = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://b.example.com/", alias: "spring-sale", domain: DOMAIN_B },
  });
  assert.equal(onA.status, 201);
  assert.equal(onB.status, 201);
  assert.equal(onB.json.shortUrl, `https://${DOMAIN_B}/spring-sale`);
  assert.equal(
    (await world.request("GET", "/spring-sale", { host: DOMAIN_A })).headers.location,
    "https://a.example.com/",
  );
  assert.equal(
    (await world.request("GET", "/spring-sale", { host: DOMAIN_B })).headers.location,
    "https://b.example.com/",
  );
});

test("US-18 a custom alias is a conditional insert: taken on the domain → 409 LINK_ALIAS_TAKEN, the first link unchanged", async () => {
  const first = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://first.example/", alias: "promo_2026" },
  });
  assert.equal(first.status, 201);
  const second = await world.request("POST", "/v1/links", {
    key,
    body: { url: "https://second.example/", alias: "promo_2026" },
  });
  assert.equal(second.status, 409);
  assert.equal(second.json.code, "LINK_ALIAS_TAKEN");
  assert.equal(second.json.field, "alias");
  assert.equal((await world.request("GET", "/promo_2026")).headers.location, "https://first.example/");
});

test("an unknown code is a 404 page; a disabled link a 410 page — never a redirect", async () => {
  const unknown = await world.request("GET", "/zzzzzzz");
  assert.equal(unknown.status, 404);
  assert.match(String(unknown.headers["content-type"]), /^text\/html/);
  assert.match(unknown.body, /not found/i);
  assert.equal((await world.request("GET", "/a.b")).status, 404, "not a code at all: no lookup, a 404");
  const link = await create({ url: "https://example.com/soon-disabled" });
  await world.request("GET", `/${link.code}`); // cached in the LRU now
  const off = await world.request("POST", `/v1/admin/links/${DOMAIN_A}/${link.code}/disable`, {
    key: ADMIN_TOKEN,
    body: { reason: "phishing report" },
  });
  assert.equal(off.status, 200, off.body);
  const gone = await world.request("GET", `/${link.code}`);
  assert.equal(gone.status, 410);
  assert.equal(gone.headers.location, undefined);
});
