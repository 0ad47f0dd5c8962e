/**
 * US-10 with a live origin whose store fails: the service runs on the real PostgreSQL through
 * lab's TCP fault proxy, the nginx edge in front (edge-fixture.ts). Then the database goes
 * away (every open link reset, new connections refused) while the origin keeps running.
 * What a user sees through the edge: a hot link — cached, its window past — is still
 * redirected (STALE: the edge's guard hop turns the origin's 503 into an upstream error, which
 * its `stale-if-error` covers — nginx applies it to no 5xx answer); a cold link fails clearly
 * (the origin answers 503 itself, the edge 502; no Location, never a wrong redirect); the
 * origin itself stays up (/healthz). After heal the cold link redirects.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { hop, newWorkspaceKey, shorten, startEdge, until } from "./edge-fixture.ts";
import { startOnStoreProxy } from "./store-proxy-fixture.ts";

/** Bounds on waiting (a loaded machine is slow; limits, not expectations). */
const STALE_BOUND_MS = 10_000;
const HEAL_BOUND_MS = 20_000;

test("US-10 the store fails under a live origin: the edge serves hot links stale on the origin's 503, a cold one fails with 502, no redirect", async (t) => {
  // No LRU in the origin: every request that reaches it is a store read.
  const world = await startOnStoreProxy(t, "us_outage", { URL_SHORTENER_CACHE_MAX_ENTRIES: "0" });
  if (!world) return;
  const { running, proxy, dir } = world;
  const nginx = await startEdge(t, {
    origin: new URL(running.url).host,
    domain: running.config.domains[0]!.host,
    accessLog: join(dir, "clicks.log"),
  });
  if (!nginx) return;
  const apiKey = await newWorkspaceKey(running, "outage");
  const hot = await shorten(running, apiKey, { url: "https://example.com/hot", cacheMaxAgeS: 1 });
  const cold = await shorten(running, apiKey, { url: "https://example.com/cold" });
  assert.equal((await hop(`${nginx.url}/${hot}`)).cache, "MISS");
  assert.equal((await hop(`${nginx.url}/${hot}`)).cache, "HIT");

  // The database goes away; the origin stays up.
  proxy.cutAll();
  await proxy.refuse(true);
  assert.equal((await fetch(`${running.url}/healthz`)).status, 200, "the origin process answers");
  const direct = await hop(`${running.url}/${cold}`);
  assert.equal(direct.status, 503, "the origin answers a miss it cannot read with 503");
  assert.equal(direct.location, null);

  // The hot link, its 1-second window past: the edge asks the origin, gets 503, serves it stale.
  await until(async () => {
    const served = await hop(`${nginx.url}/${hot}`);
    assert.equal(served.status, 302, "a cached link is never an error while the store is down");
    assert.equal(served.location, "https://example.com/hot");
    return served.cache === "STALE";
  }, STALE_BOUND_MS);
  const failed = await hop(`${nginx.url}/${cold}`);
  assert.equal(failed.status, 502, "a link the edge never saw fails with the edge's Bad Gateway");
  assert.equal(failed.location, null, "never a redirect to a guessed target");
  assert.equal(failed.cache, "MISS");
  // The 503 is not cached: still a miss, still no redirect.
  assert.equal((await hop(`${nginx.url}/${cold}`)).cache, "MISS");

  // The database is back: the cold link redirects (the pool reconnects on its own).
  await proxy.heal();
  await until(async () => (await hop(`${nginx.url}/${cold}`)).status === 302, HEAL_BOUND_MS);
  const healed = await hop(`${nginx.url}/${cold}`);
  assert.equal(healed.location, "https://example.com/cold");
});
