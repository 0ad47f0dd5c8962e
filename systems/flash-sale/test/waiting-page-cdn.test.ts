/**
 * FS-12 behind a real CDN: a private nginx (lab's spawnNginx, Debian's `nginx`) caching the
 * service as a CDN would — obeying the origin's Cache-Control, one fetch per key at a time
 * (`proxy_cache_lock`), stale served while the origin is unreachable. nginx's own log of the
 * requests it sent upstream counts what reached the origin, independent of the service:
 *
 * - 300 visitors (each with their own cookie) read the waiting page and its script: the origin
 *   sees each at most once, every visitor gets the same bytes;
 * - 30 open pages poll "serving up to P" (max-age=1) for ~2 s: the origin sees about one poll a
 *   second, not 30;
 * - the origin stopped: the page is still served, from the edge.
 *
 * Skips when nginx is not installed (fails with CASEBOOK_REQUIRE_ENGINES=1).
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { main } from "../src/main.ts";

const ADMIN = "flash-admin-token-for-cdn-tests-0";
const VISITORS = 300;
const PAGES = 30;
const POLL_MS = 250;
const POLLING_MS = 2_000;

/** The edge: a cache zone, the origin's headers obeyed, one upstream fetch per key at a time. */
function edgeBlock(port: number, dir: string, origin: string): string {
  return `
  proxy_cache_path ${join(dir, "cache")} levels=1:2 keys_zone=edge:1m max_size=16m inactive=1d use_temp_path=off;
  log_format upstream '$upstream_addr $upstream_cache_status $uri';
  server {
    listen 127.0.0.1:${port};
    location = /edge-ready { return 204; }
    location / {
      proxy_pass http://${origin};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache edge;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 5s;
      proxy_cache_use_stale error timeout updating http_502 http_503 http_504;
      proxy_cache_background_update on;
      add_header X-Cache $upstream_cache_status always;
      # Background refreshes are subrequests: logged too, or the count would miss them.
      log_subrequest on;
      access_log ${join(dir, "upstream.log")} upstream if=$upstream_addr;
    }
  }`;
}

/** The requests nginx sent to the origin, per path (its log keeps only those with an upstream). */
async function originHits(dir: string): Promise<Map<string, number>> {
  const text = await readFile(join(dir, "upstream.log"), "utf8").catch(() => "");
  const hits = new Map<string, number>();
  for (const line of text.split("\n")) {
    const path = line.split(" ")[2];
    if (path) hits.set(path, (hits.get(path) ?? 0) + 1);
  }
  return hits;
}

test("FS-12 behind a real CDN (nginx): the waiting page reaches the origin once for 300 visitors, polls about once a second for 30 pages, and is served with the origin down", async (t) => {
  const data = await mkdtemp(join(tmpdir(), "casebook-flash-cdn-"));
  t.after(() => rm(data, { recursive: true, force: true }));
  const running = await main({
    PORT: "0",
    CASEBOOK_DATA: data,
    LOG_LEVEL: "silent",
    FLASH_SALE_ADMIN_TOKEN: ADMIN,
  });
  let originUp = true;
  t.after(async () => {
    if (originUp) await running.close();
  });
  const origin = new URL(running.url).host;
  let edgeDir = "";
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({
      http: (port, dir) => {
        edgeDir = dir;
        return edgeBlock(port, dir, origin);
      },
      readyPath: "/edge-ready",
    }),
  );
  if (!nginx) return;
  t.after(() => nginx.stop());

  const created = await fetch(`${running.url}/v1/admin/sales`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "gig", name: "gig", tickets: 10, priceMinor: 5_000, currency: "USD" }),
  });
  assert.equal(created.status, 201);

  // 300 visitors, 30 at a time, each with a cookie of their own.
  const bodies = new Set<string>();
  for (let from = 0; from < VISITORS; from += 30) {
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        for (const path of ["/wait/", "/wait/wait.js"]) {
          const res = await fetch(`${nginx.url}${path}`, { headers: { cookie: `visitor=${from + i}` } });
          assert.equal(res.status, 200);
          const body = await res.text();
          if (path === "/wait/") bodies.add(body);
        }
      }),
    );
  }
  assert.equal(bodies.size, 1, "every visitor got the same page");
  let hits = await originHits(edgeDir);
  assert.equal(hits.get("/wait/"), 1, `the page reached the origin once for ${VISITORS} visitors`);
  assert.equal(hits.get("/wait/wait.js"), 1, "its script too");

  // 30 open pages poll the room every 250 ms for 2 s: 240 polls at the edge.
  const started = performance.now();
  let polls = 0;
  await Promise.all(
    Array.from({ length: PAGES }, async () => {
      while (performance.now() - started < POLLING_MS) {
        const res = await fetch(`${nginx.url}/v1/sales/gig/room`);
        assert.equal(res.status, 200);
        await res.body?.cancel();
        polls++;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  hits = await originHits(edgeDir);
  const roomHits = hits.get("/v1/sales/gig/room") ?? 0;
  assert.ok(polls >= PAGES * 2, `the pages polled (${polls})`);
  t.diagnostic(`${polls} polls at the edge in ${elapsedS.toFixed(1)} s, ${roomHits} reached the origin`);
  // max-age=1 and one fetch at a time: about one a second (a refresh may straddle a second).
  assert.ok(
    roomHits <= Math.ceil(elapsedS) * 2 + 1,
    `${roomHits} polls reached the origin for ${polls} at the edge in ${elapsedS.toFixed(1)} s`,
  );

  // The origin goes away: the page is still served, from the edge.
  await running.close();
  originUp = false;
  const res = await fetch(`${nginx.url}/wait/`, { headers: { cookie: "visitor=late" } });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), [...bodies][0]);
  assert.equal(res.headers.get("x-cache"), "HIT");
});
