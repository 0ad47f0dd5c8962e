/**
 * Clicks (US-15, issue 18's click pipeline) through main() on PGlite with a manual clock; the
 * flusher and the rollup are driven by hand (their loops idle for minutes), so each step is
 * seen: redirects write nothing to the database, the buffer holds the visits, one INSERT per
 * batch appends them to a day partition, the rollup's totals agree with the raw log with bots
 * kept but excluded and orphan visits apart; the analytics API and QR codes.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ClickStore } from "../src/store/click-store.ts";
import { ADMIN_TOKEN, type ApiWorld, apiWorld, DOMAIN_A, DOMAIN_B, START_MS } from "./api-fixture.ts";

let world: ApiWorld;
let key = "";
const IDLE = { URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS: "600s", URL_SHORTENER_ROLLUP_INTERVAL_MS: "3600s" };
const CHROME =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36";
const BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

before(async () => {
  world = await apiWorld(IDLE);
  key = await world.workspace("acme");
});
after(() => world?.close());

const pipeline = () => world.running.clicks!;
async function rows(sql: string): Promise<number> {
  const { rows } = await world.running.clicksDb.query<{ n: number }>(sql);
  return rows[0]!.n;
}
async function create(url: string): Promise<string> {
  const res = await world.request("POST", "/v1/links", { key, body: { url } });
  assert.equal(res.status, 201, res.body);
  return res.json.code;
}
const visit = (code: string, headers: Record<string, string> = {}) =>
  world.request("GET", `/${code}`, { headers: { "user-agent": CHROME, ...headers } });

test("US-15 a batch's text survives the INSERT's array literals byte for byte (quotes, backslashes, braces, NULL)", async () => {
  const store = new ClickStore(world.running.clicksDb);
  const odd = ['q"uote', "back\\slash", "{br,ace}", "NULL", "ünï ✓"];
  await store.append(
    odd.map((code, i) => ({
      atMs: START_MS + i,
      domain: "odd.example",
      code,
      status: 302,
      referrerHost: i === 0 ? null : code,
      uaFamily: "other" as const,
      bot: false,
      visitorHash: code,
      orphan: false,
    })),
  );
  const { rows } = await world.running.clicksDb.query<{
    code: string;
    referrer_host: string | null;
    at: Date;
  }>("SELECT code, referrer_host, at FROM clicks WHERE domain = 'odd.example' ORDER BY at");
  assert.deepEqual(
    rows.map((r) => [r.code, r.referrer_host, r.at.getTime()]),
    odd.map((code, i) => [code, i === 0 ? null : code, START_MS + i]),
  );
});

test("US-15 300 redirects write nothing to the database: the visits wait in the buffer, then ONE insert appends them", async () => {
  const code = await create("https://example.com/hot");
  await pipeline().flusher.flushOnce();
  const clicks = "SELECT coalesce(sum(click_count), 0)::int AS n FROM clicks";
  const before = await rows(clicks);
  const rowsBefore = await rows("SELECT count(*)::int AS n FROM clicks");
  const flushedBefore = pipeline().flusher.stats.batches;
  for (let i = 0; i < 300; i++) assert.equal((await visit(code)).status, 302);
  assert.equal(await rows(clicks), before, "no row written by a redirect");
  assert.equal(pipeline().buffer.size, 300);
  assert.equal(await pipeline().flusher.flushOnce(), 300);
  assert.equal(pipeline().flusher.stats.batches, flushedBefore + 1);
  assert.equal(await rows(clicks), before + 300, "every click counted");
  assert.equal(
    await rows("SELECT count(*)::int AS n FROM clicks"),
    rowsBefore + 1,
    "300 clicks equal in every field within one second (the manual clock stands still): one row of 300",
  );
  const metrics = (await world.request("GET", "/metrics")).body;
  assert.match(metrics, /^url_shortener_clicks_flushed_total \d+/m);
});

test("US-15 the rollup per hour and day agrees with the raw log; bots kept but excluded; orphan visits apart", async () => {
  const code = await create("https://example.com/campaign");
  world.clock.setWallMs(START_MS + 3 * 3_600_000 + 60_000); // 03:01
  for (let i = 0; i < 6; i++) await visit(code, { referer: "https://news.example/story" });
  for (let i = 0; i < 2; i++) await visit(code, { "user-agent": BOT });
  world.clock.setWallMs(START_MS + 4 * 3_600_000 + 60_000); // 04:01
  for (let i = 0; i < 3; i++) await visit(code, { referer: "https://mail.example/" });
  await world.request("GET", "/nosuchcode");
  await pipeline().flusher.flushOnce();
  await pipeline().rollup.runOnce();
  await pipeline().rollup.runOnce(); // idempotent: recomputed, not added twice
  const stats = await world.request(
    "GET",
    `/v1/links/${DOMAIN_A}/${code}/clicks?granularity=hour&from=2026-01-01T00:00:00Z&to=2026-01-01T12:00:00Z`,
    { key },
  );
  assert.equal(stats.status, 200, stats.body);
  assert.deepEqual(stats.json.totals, { clicks: 9, botClicks: 2 });
  assert.deepEqual(
    stats.json.series.map((p: { bucketStart: string; clicks: number; botClicks: number }) => [
      p.bucketStart,
      p.clicks,
      p.botClicks,
    ]),
    [
      ["2026-01-01T03:00:00.000Z", 6, 2],
      ["2026-01-01T04:00:00.000Z", 3, 0],
    ],
  );
  assert.equal(stats.json.series[0].visitors, 1, "one browser from one address: one visitor");
  assert.deepEqual(stats.json.topReferrers, [
    { referrer: "news.example", clicks: 6 },
    { referrer: "mail.example", clicks: 3 },
  ]);
  const daily = await world.request(
    "GET",
    `/v1/links/${DOMAIN_A}/${code}/clicks?granularity=day&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`,
    { key },
  );
  assert.deepEqual(daily.json.totals, { clicks: 9, botClicks: 2 });
  const store = new ClickStore(world.running.clicksDb);
  assert.deepEqual(await store.rawTotals(DOMAIN_A, code), { clicks: 9, botClicks: 2 }, "rollup = raw log");
  const orphans = await store.orphans(START_MS, START_MS + 86_400_000);
  assert.deepEqual(orphans, [{ domain: DOMAIN_A, kind: "unknown", status: 404, visits: 1 }]);
  world.clock.setWallMs(START_MS);
});

test("US-15 the append-only log is partitioned by day", async () => {
  const code = await create("https://example.com/days");
  world.clock.setWallMs(START_MS + 86_400_000 + 5_000);
  await visit(code);
  await pipeline().flusher.flushOnce();
  world.clock.setWallMs(START_MS);
  const partitions = await new ClickStore(world.running.clicksDb).partitions();
  assert.ok(
    partitions.includes("clicks_20260101") && partitions.includes("clicks_20260102"),
    partitions.join(","),
  );
  assert.equal(await rows("SELECT count(*)::int AS n FROM clicks_20260102"), 1);
});

test("a link's clicks are its workspace's: another key gets 404", async () => {
  const code = await create("https://example.com/mine");
  const other = await world.workspace("nosy");
  assert.equal(
    (await world.request("GET", `/v1/links/${DOMAIN_A}/${code}/clicks`, { key: other })).status,
    404,
  );
});

test("QR codes of the short URL, as PNG and SVG", async () => {
  const code = await create("https://example.com/qr");
  const png = await world.running.service.app.inject({
    url: `/v1/links/${DOMAIN_A}/${code}/qr?format=png&size=128`,
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(png.statusCode, 200);
  assert.equal(png.headers["content-type"], "image/png");
  assert.deepEqual([...png.rawPayload.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const svg = await world.request("GET", `/v1/links/${DOMAIN_A}/${code}/qr?format=svg`, { key });
  assert.equal(svg.status, 200);
  assert.match(String(svg.headers["content-type"]), /^image\/svg\+xml/);
  assert.match(svg.body, /^<svg /);
});

test("base-domain visits (GET / on a short domain) are orphan visits, counted apart with unknown codes; the API lists them by kind", async () => {
  const before = await pipeline().flusher.flushOnce();
  assert.ok(before >= 0);
  for (let i = 0; i < 3; i++) assert.equal((await world.request("GET", "/", { host: DOMAIN_B })).status, 200);
  // Not a short domain: the service's own landing page, no visit.
  await world.request("GET", "/", { host: "127.0.0.1:8109" });
  await world.request("GET", "/nosuchcode", { host: DOMAIN_B });
  await pipeline().flusher.flushOnce();
  const listed = await world.request("GET", "/v1/admin/orphan-visits", { key: ADMIN_TOKEN });
  assert.equal(listed.status, 200, listed.body);
  const onB = listed.json.orphans.filter((o: { domain: string }) => o.domain === DOMAIN_B);
  assert.deepEqual(onB, [
    { domain: DOMAIN_B, kind: "base", status: 200, visits: 3 },
    { domain: DOMAIN_B, kind: "unknown", status: 404, visits: 1 },
  ]);
  assert.equal(
    await rows(`SELECT count(*)::int AS n FROM click_rollups WHERE code = ''`),
    0,
    "never a link's click",
  );
});
