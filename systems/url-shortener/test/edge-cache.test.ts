/**
 * The edge in front of the service (US-08, US-09, US-10): a private nginx (edge-fixture.ts)
 * with src/edge/nginx-edge-config.ts, proxying to main() on PGlite. The origin's own counter
 * of redirects (`url_shortener_redirects_total`) says how many requests reached it.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { main, type RunningSystem } from "../src/main.ts";
import { hop, originRedirects, shorten as shortenWith, startEdge, until } from "./edge-fixture.ts";

test("US-09 US-10 US-08 the edge: one origin request per code per max-age window; hot links served with the origin down; a 302 without Cache-Control is not cached", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-edge-"));
  // No LRU in the origin: every request that reaches it is a store read, so the edge's effect is the whole effect.
  let running: RunningSystem | undefined = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dir,
    URL_SHORTENER_CACHE_MAX_ENTRIES: "0",
  });
  t.after(async () => {
    await running?.close();
    await rm(dir, { recursive: true, force: true });
  });
  const nginx = await startEdge(t, {
    origin: new URL(running.url).host,
    domain: running.config.domains[0]!.host,
    accessLog: join(dir, "clicks.log"),
  });
  if (!nginx) return;
  const apiKey = running.bootstrap!.apiKey;
  const shorten = (r: RunningSystem, body: Record<string, unknown>) => shortenWith(r, apiKey, body);

  // US-09: 200 clicks of one code within its window reach the origin once.
  const hot = await shorten(running, { url: "https://example.com/hot" });
  const before = await originRedirects(running);
  for (let i = 0; i < 200; i++) {
    const answer = await hop(`${nginx.url}/${hot}`);
    assert.equal(answer.status, 302);
    assert.equal(answer.location, "https://example.com/hot");
  }
  assert.equal((await originRedirects(running)) - before, 1, "one miss, 199 edge hits");

  // One request per window: a link cached 1 s is asked for again once its window has passed.
  const short = await shorten(running, { url: "https://example.com/short", cacheMaxAgeS: 1 });
  const beforeShort = await originRedirects(running);
  assert.equal((await hop(`${nginx.url}/${short}`)).cache, "MISS");
  assert.equal((await hop(`${nginx.url}/${short}`)).cache, "HIT");
  await until(async () => (await hop(`${nginx.url}/${short}`)).cache === "EXPIRED", 10_000);
  assert.equal((await originRedirects(running)) - beforeShort, 2);

  // US-08: the same origin with its Cache-Control stripped: nothing is cached, every request reaches it.
  const plain = await shorten(running, { url: "https://example.com/plain" });
  const beforePlain = await originRedirects(running);
  for (let i = 0; i < 5; i++) assert.equal((await hop(`${nginx.url}/no-cache-control/${plain}`)).status, 302);
  assert.equal((await originRedirects(running)) - beforePlain, 5);

  // US-10: the origin and its store go away; the hot links are still served by the edge (stale
  // once their window passed), a cold one fails clearly.
  const cold = await shorten(running, { url: "https://example.com/cold" });
  await running.close();
  running = undefined;
  const served = await hop(`${nginx.url}/${hot}`);
  assert.equal(served.status, 302);
  assert.equal(served.location, "https://example.com/hot");
  // The 1-second link: HIT while its window lasts, then STALE (never an error) with the origin down.
  await until(async () => {
    const stale = await hop(`${nginx.url}/${short}`);
    assert.equal(stale.status, 302, "a cached link past its window is served stale while the origin is down");
    assert.equal(stale.location, "https://example.com/short");
    return stale.cache === "STALE";
  }, 10_000);
  const failed = await hop(`${nginx.url}/${cold}`);
  assert.equal(
    failed.status,
    502,
    "a link the edge never saw fails with the edge's Bad Gateway, not a wrong redirect",
  );
  assert.equal(failed.location, null);
});
