/**
 * Clicks counted from where they are served (US-07, US-09, US-15; issue 18's "N clicks through
 * nginx (hits and misses) → N in the rollup, during a flush and across a restart"): the nginx
 * edge logs every visit it answers (hit, miss, stale, bypass, 404) to its JSON access log, the
 * service ingests it into the click log beside its own records, and each click is counted
 * once — the origin records nothing for a request the edge sent (X-Edge-Token), only for
 * clicks that came to it directly. The ingester and the flusher run every 50 ms while the
 * clicks arrive; the service is closed and restarted in the middle (the edge keeps serving
 * and logging meanwhile).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { main, type RunningSystem } from "../src/main.ts";
import { EDGE_TOKEN, type Hop, hop, shorten, startEdge } from "./edge-fixture.ts";

const BROWSER = { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36" };

async function clicksIn(running: RunningSystem, code: string) {
  const { rows } = await running.clicksDb.query<{ raw: number; rolled: number }>(
    `SELECT (SELECT coalesce(sum(click_count), 0)::int FROM clicks WHERE code = $1 AND NOT bot) AS raw,
            (SELECT coalesce(sum(clicks), 0)::int FROM click_rollups WHERE code = $1 AND granularity = 'day') AS rolled`,
    [code],
  );
  return rows[0]!;
}

test("US-09 US-15 N clicks through the edge (hits, misses, stale, bypass, orphans) and M straight to the origin → N + M in the rollup, each once, during flushes and across a restart", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-edge-clicks-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const accessLog = join(dir, "edge-clicks.log");
  // A fixed port: the edge's upstream must find the restarted service where the first one was.
  const env = {
    PORT: String(await freePort()),
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dir,
    URL_SHORTENER_EDGE_TOKEN: EDGE_TOKEN,
    URL_SHORTENER_EDGE_ACCESS_LOG: accessLog,
    URL_SHORTENER_EDGE_INGEST_INTERVAL_MS: "50ms",
    URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS: "50ms",
  };
  let running: RunningSystem | undefined = await main(env);
  t.after(() => running?.close());
  const apiKey = running.bootstrap!.apiKey;
  const originHost = new URL(running.url).host;
  const nginx = await startEdge(t, {
    origin: originHost,
    domain: running.config.domains[0]!.host,
    accessLog,
  });
  if (!nginx) return;

  const hot = await shorten(running, apiKey, { url: "https://example.com/hot" });
  const short = await shorten(running, apiKey, { url: "https://example.com/short", cacheMaxAgeS: 1 });
  const expected = new Map<string, number>([
    [hot, 0],
    [short, 0],
  ]);
  const seen = new Map<string, number>();
  const click = async (base: string, code: string, query = "") => {
    const answer: Hop = await hop(`${base}/${code}${query}`, BROWSER);
    assert.equal(answer.status, 302);
    expected.set(code, expected.get(code)! + 1);
    seen.set(answer.cache ?? "origin", (seen.get(answer.cache ?? "origin") ?? 0) + 1);
  };
  // Phase 1: 10 rounds of 12 concurrent clicks through the edge, 2 straight to the origin.
  const round = (base: string) =>
    Promise.all([
      ...Array.from({ length: 8 }, () => click(base, hot)),
      ...Array.from({ length: 3 }, () => click(base, short)),
      click(base, hot, "?utm_source=mail"), // a query string bypasses the edge's cache
    ]);
  for (let i = 0; i < 10; i++) {
    await round(nginx.url);
    await click(running.url, hot);
    await click(running.url, short);
    if (i % 3 === 0) await new Promise((resolve) => setTimeout(resolve, 1_100)); // the 1-second link expires at the edge
  }
  let orphans = 0;
  for (let i = 0; i < 5; i++) {
    assert.equal((await hop(`${nginx.url}/nosuchcode`, BROWSER)).status, 404);
    orphans += 1;
  }

  // The service stops (graceful: its ingester reads the log to the end); the edge keeps
  // serving the cached redirects — and logging them.
  await running.close();
  running = undefined;
  for (let i = 0; i < 20; i++) await click(nginx.url, hot);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  for (let i = 0; i < 5; i++) await click(nginx.url, short); // past its window: STALE (stale-if-error)

  running = await main(env);
  for (let i = 0; i < 3; i++) {
    await round(nginx.url);
    await click(running.url, hot);
  }
  // The last clicks are counted once the ingester and the flusher have run; close() runs both to the end.
  await running.close();
  running = await main(env);
  await running.clicks!.rollup.runOnce();

  for (const cache of ["MISS", "HIT", "STALE", "BYPASS", "EXPIRED", "origin"])
    assert.ok((seen.get(cache) ?? 0) > 0, `clicks answered as ${cache}: ${JSON.stringify([...seen])}`);
  for (const [code, n] of expected) {
    const counted = await clicksIn(running, code);
    assert.deepEqual(counted, { raw: n, rolled: n }, `link ${code}: ${n} clicks`);
  }
  const { rows } = await running.clicksDb.query<{ n: number }>(
    "SELECT coalesce(sum(click_count), 0)::int AS n FROM clicks WHERE code = 'nosuchcode' AND orphan",
  );
  assert.equal(rows[0]!.n, orphans, "orphan visits through the edge, once each");
});
