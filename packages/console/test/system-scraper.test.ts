/**
 * A system's state from its /readyz — 200 up, another answer degraded, no answer down — and
 * its /metrics into the window, each request bounded; a body over the bound is a failed
 * scrape (a gap), not a console holding megabytes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SystemScraper } from "../src/system-scraper.ts";

const targets = [
  { name: "ok", url: "http://ok.test", started: true },
  { name: "sick", url: "http://sick.test", started: true },
  { name: "gone", url: "http://gone.test", started: true },
  { name: "huge", url: "http://huge.test", started: true },
  { name: "idle", url: "http://idle.test", started: false },
];

const fakeFetch = (async (input: string | URL | Request) => {
  const url = new URL(String(input));
  if (url.host === "gone.test")
    throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
  if (url.pathname === "/readyz") return new Response("{}", { status: url.host === "sick.test" ? 503 : 200 });
  if (url.host === "huge.test") return new Response("x 1\n".repeat(100));
  return new Response("requests_total 7\n");
}) as typeof fetch;

test("/readyz gives up, degraded or down; /metrics fills the window; an oversized body is a gap", async () => {
  let now = 1_000;
  const scraper = new SystemScraper(targets, {
    intervalMs: 1_000,
    windowScrapes: 5,
    maxBodyBytes: 64,
    log: { warn() {} },
    fetch: fakeFetch,
    now: () => now,
  });
  await scraper.scrapeOnce();
  now += 1_000;
  await scraper.scrapeOnce();
  assert.equal(scraper.health("ok").state, "up");
  assert.deepEqual(scraper.health("sick"), {
    state: "degraded",
    detail: "/readyz answered 503",
    checkedAtMs: 2_000,
  });
  assert.equal(scraper.health("gone").state, "down");
  assert.equal(scraper.health("gone").detail, "connect ECONNREFUSED");
  assert.equal(scraper.health("idle").state, "unknown", "a system not started is not probed");
  assert.equal(scraper.window("idle"), undefined);
  const plot = {
    title: "R",
    unit: "r",
    series: [{ metric: "requests_total", fn: "value" as const, label: "r" }],
  };
  assert.deepEqual(scraper.window("ok")!.plot(plot).lines, [{ label: "r", values: [7, 7] }]);
  assert.deepEqual(
    scraper.window("huge")!.plot({ ...plot, series: [{ metric: "x", fn: "value", label: "x" }] }).lines,
    [],
  );
});
