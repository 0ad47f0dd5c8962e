/**
 * The scraper's bounds, against small HTTP servers standing in for misbehaving exporters: each
 * failure fails that target's scrape whole — `up` 0 and the reason on its target — while the
 * healthy target in the same round is scraped as usual: a status other than 200, a body over
 * the byte bound, more samples than the limit, a line that does not parse, and a target that
 * never answers (cut at the timeout, the round not held longer than it).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { labelsToRecord } from "../src/domain/labels.ts";
import { parseScrapeTargets } from "../src/domain/scrape-target.ts";
import type { IngestSeries } from "../src/store/sample-ingest.ts";
import { Scraper } from "../src/workers/scraper.ts";

const pages: Record<string, { status: number; body: string } | "hang"> = {
  "/ok": { status: 200, body: "a 1\nb 2\n" },
  "/error": { status: 500, body: "boom" },
  "/big": { status: 200, body: `# ${"x".repeat(8_192)}\na 1\n` },
  "/many": { status: 200, body: Array.from({ length: 20 }, (_, i) => `m${i} 1`).join("\n") },
  "/garbled": { status: 200, body: "a 1\nb{c=1} 2\n" },
  "/hang": "hang",
};

async function startExporter(): Promise<{ base: string; server: Server }> {
  const server = createServer((req, res) => {
    const page = pages[req.url ?? ""];
    if (page === undefined || page === "hang") return; // never answers
    res.writeHead(page.status, { "content-type": "text/plain" });
    res.end(page.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

test("each misbehaving target fails its own scrape (up 0, the reason kept); the healthy one is scraped in the same round", async (t) => {
  const { base, server } = await startExporter();
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const targets = parseScrapeTargets(
    Object.keys(pages)
      .map((path) => `${path.slice(1)}=${base}${path}`)
      .join(","),
  );
  const written: Array<{ tenant: string; series: IngestSeries }> = [];
  const scraper = new Scraper({
    targets,
    tenant: { id: "casebook", maxSeries: undefined, maxSeriesPerMetric: undefined },
    ingest: { write: async (tenant, series) => void written.push({ tenant: tenant.id, series }) },
    clock: new ManualClock(1_700_000_000_000),
    intervalMs: 1_000,
    timeoutMs: 600,
    maxBodyBytes: 4_096,
    maxSamples: 10,
    onError: (error) => assert.fail(String(error)),
  });
  t.after(() => scraper.stop());
  const started = performance.now();
  await scraper.scrapeOnce();
  const roundMs = performance.now() - started;
  assert.ok(
    roundMs < 5_000,
    `the round waits for the slowest target's timeout only (${Math.round(roundMs)} ms)`,
  );

  const states = Object.fromEntries(scraper.states().map((s) => [s.target.job, s]));
  assert.equal(states.ok!.health, "up");
  assert.equal(states.ok!.lastError, "");
  assert.match(states.error!.lastError, /HTTP status 500/);
  assert.match(states.big!.lastError, /4096|too large|bytes/i);
  assert.match(states.many!.lastError, /sample limit exceeded: more than 10 samples/);
  assert.match(states.garbled!.lastError, /^line 2: /);
  assert.match(states.hang!.lastError, /headers|timeout|time/i);
  for (const job of ["error", "big", "many", "garbled", "hang"])
    assert.equal(states[job]!.health, "down", job);

  const upOf = (job: string) => {
    const batch = written.find((w) => w.series.some((s) => labelsToRecord(s.labels).job === job))!;
    assert.equal(batch.tenant, "casebook");
    const up = batch.series.find((s) => labelsToRecord(s.labels).__name__ === "up")!;
    return up.samples[0]!.v;
  };
  assert.equal(upOf("ok"), 1);
  for (const job of ["error", "big", "many", "garbled", "hang"]) assert.equal(upOf(job), 0, job);
  const okSeries = written.find((w) => w.series.some((s) => labelsToRecord(s.labels).job === "ok"))!.series;
  assert.deepEqual(okSeries.map((s) => labelsToRecord(s.labels).__name__).sort(), [
    "a",
    "b",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "up",
  ]);
});

test("a timeout above the interval is refused, as Prometheus refuses it", () => {
  assert.throws(
    () =>
      new Scraper({
        targets: [],
        tenant: { id: "t", maxSeries: undefined, maxSeriesPerMetric: undefined },
        ingest: { write: async () => {} },
        clock: new ManualClock(0),
        intervalMs: 1_000,
        timeoutMs: 2_000,
        maxBodyBytes: 1_024,
        maxSamples: 10,
        onError: () => {},
      }),
    /must not exceed its interval/,
  );
});
