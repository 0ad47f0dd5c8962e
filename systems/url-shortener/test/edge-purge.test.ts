/**
 * The edge forgets a changed link at once (issue 18: "disabling a link or changing its target
 * purges it from the edge"), and never serves an expired one (US-12), even cut off from the
 * origin. A private nginx with the purge module in front of main() on PGlite; the service
 * purges through URL_SHORTENER_EDGE_PURGE_URL after every edit, disable and delete.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { PURGE_PATH } from "../src/edge/nginx-edge-config.ts";
import { main, type RunningSystem } from "../src/main.ts";
import { hop, shorten, startEdge, until } from "./edge-fixture.ts";

const ADMIN_TOKEN = "admin-token-for-the-edge-purge-test";

async function call(running: RunningSystem, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${running.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
}

async function purges(running: RunningSystem): Promise<Record<string, number>> {
  const text = await (await fetch(`${running.url}/metrics`)).text();
  return Object.fromEntries(
    [...text.matchAll(/^url_shortener_edge_purges_total\{outcome="(\w+)"\} (\d+)$/gm)].map((m) => [
      m[1],
      Number(m[2]),
    ]),
  );
}

test("US-12 US-16 the edge: an edited, disabled or deleted link is purged at once; an expired link is never served, even with the origin down", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-edge-purge-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const port = await freePort();
  // The edge first (its readiness answer is a 502 until the service is up), then the service that purges it.
  const nginx = await startEdge(t, {
    origin: `127.0.0.1:${port}`,
    domain: `localhost:${port}`,
    accessLog: join(dir, "clicks.log"),
  });
  if (!nginx) return;
  let running: RunningSystem | undefined = await main({
    PORT: String(port),
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dir,
    URL_SHORTENER_DOMAINS: `http://localhost:${port}`,
    URL_SHORTENER_ADMIN_TOKEN: ADMIN_TOKEN,
    URL_SHORTENER_EDGE_PURGE_URL: `${nginx.url}${PURGE_PATH}`,
  });
  t.after(() => running?.close());
  const made = await call(running, "POST", "/v1/admin/workspaces", ADMIN_TOKEN, { id: "edge", name: "edge" });
  assert.equal(made.status, 201);
  const key = made.json.apiKey.key as string;
  const domain = running.config.domains[0]!.host;
  const cached = async (code: string, location: string) => {
    assert.equal((await hop(`${nginx.url}/${code}`)).cache, "MISS");
    const hit = await hop(`${nginx.url}/${code}`);
    assert.deepEqual([hit.status, hit.location, hit.cache], [302, location, "HIT"]);
  };

  // A new target: the next click through the edge gets it, not the cached one (max-age 300).
  const edited = await shorten(running, key, { url: "https://example.com/old" });
  await cached(edited, "https://example.com/old");
  const patched = await call(running, "PATCH", `/v1/links/${domain}/${edited}`, key, {
    url: "https://example.com/new",
  });
  assert.equal(patched.status, 200);
  const after = await hop(`${nginx.url}/${edited}`);
  assert.deepEqual([after.status, after.location, after.cache], [302, "https://example.com/new", "MISS"]);

  // Disabled by an admin (US-16): 410 at once; enabled again: redirects again.
  const abused = await shorten(running, key, { url: "https://example.com/phishy" });
  await cached(abused, "https://example.com/phishy");
  assert.equal(
    (await call(running, "POST", `/v1/admin/links/${domain}/${abused}/disable`, ADMIN_TOKEN, {})).status,
    200,
  );
  const gone = await hop(`${nginx.url}/${abused}`);
  assert.deepEqual([gone.status, gone.location], [410, null]);
  assert.equal(
    (await call(running, "POST", `/v1/admin/links/${domain}/${abused}/enable`, ADMIN_TOKEN, {})).status,
    200,
  );
  assert.equal((await hop(`${nginx.url}/${abused}`)).status, 302);

  // Deleted: 404 at once.
  const deleted = await shorten(running, key, { url: "https://example.com/deleted" });
  await cached(deleted, "https://example.com/deleted");
  assert.equal((await call(running, "DELETE", `/v1/links/${domain}/${deleted}`, key)).status, 204);
  assert.equal((await hop(`${nginx.url}/${deleted}`)).status, 404);
  const counts = await purges(running);
  assert.ok((counts.purged ?? 0) >= 3, `purged: ${JSON.stringify(counts)}`);
  assert.equal(counts.failed ?? 0, 0);

  // US-12: a link expiring in 4 s, fresh for 1 s, cached at the edge; the origin goes away.
  // While it lives the edge may serve it stale (stale-if-error, capped by its life); from its
  // expiry on, never: a 502, not a redirect.
  const expiresAtMs = Date.now() + 4_000;
  const expiring = await shorten(running, key, {
    url: "https://example.com/expiring",
    cacheMaxAgeS: 1,
    expiresAt: new Date(expiresAtMs).toISOString(),
  });
  await cached(expiring, "https://example.com/expiring");
  await running.close();
  running = undefined;
  await until(async () => {
    const sentAtMs = Date.now();
    const answer = await hop(`${nginx.url}/${expiring}`);
    if (sentAtMs < expiresAtMs) return false; // still alive when asked: stale or 502 are both fine
    assert.deepEqual(
      [answer.status, answer.location],
      [502, null],
      "past its expiry the edge must not redirect",
    );
    return true;
  }, 20_000);
  for (let i = 0; i < 5; i++) {
    const answer = await hop(`${nginx.url}/${expiring}`);
    assert.deepEqual([answer.status, answer.location], [502, null]);
  }
});
