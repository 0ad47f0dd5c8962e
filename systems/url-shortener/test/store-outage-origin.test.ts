/**
 * The database goes away under the origin alone (no edge): the README's failure row "the API
 * and cold redirects answer 503 SQL_UNAVAILABLE; links in the LRU keep redirecting until their
 * entry's TTL". The service runs on the real PostgreSQL through lab's TCP fault proxy; the
 * proxy resets every open link and refuses new ones, the process keeps running.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hop, newWorkspaceKey, shorten, until } from "./edge-fixture.ts";
import { startOnStoreProxy } from "./store-proxy-fixture.ts";

const HEAL_BOUND_MS = 20_000;
/** The LRU entry's life in this test: long enough to outlast the outage's checks. */
const CACHE_TTL_MS = 60_000;

test("the store down under the origin: a link in the LRU still redirects, a cold one and the API answer 503 SQL_UNAVAILABLE, nothing half-written; after heal all work", async (t) => {
  const world = await startOnStoreProxy(t, "us_origin_outage", {
    URL_SHORTENER_CACHE_TTL_MS: String(CACHE_TTL_MS),
  });
  if (!world) return;
  const { running, proxy } = world;
  const apiKey = await newWorkspaceKey(running, "outage");
  const hot = await shorten(running, apiKey, { url: "https://example.com/hot" });
  const cold = await shorten(running, apiKey, { url: "https://example.com/cold" });
  assert.equal((await hop(`${running.url}/${hot}`)).status, 302, "read once: now in the LRU");

  proxy.cutAll();
  await proxy.refuse(true);

  const served = await hop(`${running.url}/${hot}`);
  assert.equal(served.status, 302, "a link in the LRU redirects with the store down");
  assert.equal(served.location, "https://example.com/hot");
  const missed = await fetch(`${running.url}/${cold}`, { redirect: "manual" });
  assert.equal(missed.status, 503, "a link not in the LRU cannot be read: 503, never a guess");
  assert.equal(missed.headers.get("location"), null);
  await missed.body?.cancel();

  const attempt = await fetch(`${running.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/during-outage", alias: "during-outage" }),
  });
  assert.equal(attempt.status, 503, "the API answers 503 while the store is down");
  assert.equal(((await attempt.json()) as { code: string }).code, "SQL_UNAVAILABLE");
  const listed = await fetch(`${running.url}/v1/links`, { headers: { authorization: `Bearer ${apiKey}` } });
  assert.equal(listed.status, 503);
  await listed.body?.cancel();
  assert.equal((await fetch(`${running.url}/healthz`)).status, 200, "the process itself stays up");

  await proxy.heal();
  await until(async () => (await hop(`${running.url}/${cold}`)).status === 302, HEAL_BOUND_MS);
  const retried = await fetch(`${running.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/during-outage", alias: "during-outage" }),
  });
  assert.equal(retried.status, 201, "the refused create left nothing behind: its alias is free");
});
