/**
 * The scraper's pure half: METRICS_SCRAPE_TARGETS read as Prometheus's static targets, and a
 * scrape turned into the batch Prometheus's scrape loop would append — job/instance labels (a
 * target's own renamed exported_…), the three scrape series, honoured timestamps, duplicates
 * dropped, and staleness markers when a series or the whole target goes away.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePromText } from "@casebook/kit/prom-text";
import { type Labels, labelsToRecord, seriesKey } from "../src/domain/labels.ts";
import { scrapeBatch } from "../src/domain/scrape-series.ts";
import { parseScrapeTargets, ScrapeTargetError } from "../src/domain/scrape-target.ts";
import { isStaleNaN } from "../src/domain/staleness.ts";

test("targets: job=url, /metrics when the URL has no path, instance as host:port", () => {
  assert.deepEqual(
    parseScrapeTargets(" cache=http://127.0.0.1:8114 , web=https://a.example/m/metrics,x=http://h"),
    [
      { job: "cache", instance: "127.0.0.1:8114", url: "http://127.0.0.1:8114/metrics" },
      { job: "web", instance: "a.example:443", url: "https://a.example/m/metrics" },
      { job: "x", instance: "h:80", url: "http://h/metrics" },
    ],
  );
  assert.deepEqual(parseScrapeTargets(undefined), []);
  assert.deepEqual(parseScrapeTargets(""), []);
});

test("targets: each bad entry is refused with the entry and the reason", () => {
  const cases: Array<[string, RegExp]> = [
    ["cache", /write it as job=url/],
    ["1cache=http://h:1", /not a job name/],
    ["cache=not a url", /does not parse/],
    ["cache=ftp://h/metrics", /only http/],
    ["cache=http://u:p@h:1", /no credentials/],
    ["a=http://h:1,a=http://h:1/metrics", /already scrapes h:1/],
  ];
  for (const [text, reason] of cases) {
    assert.throws(
      () => parseScrapeTargets(text),
      (error: unknown) => error instanceof ScrapeTargetError && reason.test(error.message),
      text,
    );
  }
});

const target = { job: "cache", instance: "127.0.0.1:8114", url: "http://127.0.0.1:8114/metrics" };
const records = (series: ReadonlyArray<{ labels: Labels }>) => series.map((s) => labelsToRecord(s.labels));
const sampleOf = (batch: ReturnType<typeof scrapeBatch>, name: string) =>
  batch.series.find((s) => labelsToRecord(s.labels).__name__ === name)?.samples[0]?.v;

test("a scrape: job and instance on every series, the target's own renamed, and up/duration/samples", () => {
  const { samples } = parsePromText(
    [
      'hits_total{kind="get"} 7',
      'proxied{job="upstream",instance="10.0.0.1:9"} 1',
      "stamped 3 1700000000123",
      'hits_total{kind="get"} 8',
    ].join("\n"),
  );
  const batch = scrapeBatch(target, 1_700_000_005_000, { ok: true, samples, durationMs: 12 }, new Map());
  assert.deepEqual(records(batch.series).slice(0, 3), [
    { __name__: "hits_total", instance: "127.0.0.1:8114", job: "cache", kind: "get" },
    {
      __name__: "proxied",
      exported_instance: "10.0.0.1:9",
      exported_job: "upstream",
      instance: "127.0.0.1:8114",
      job: "cache",
    },
    { __name__: "stamped", instance: "127.0.0.1:8114", job: "cache" },
  ]);
  assert.deepEqual(
    batch.series.slice(0, 3).map((s) => s.samples),
    [[{ t: 1_700_000_005_000, v: 7 }], [{ t: 1_700_000_005_000, v: 1 }], [{ t: 1_700_000_000_123, v: 3 }]],
    "the scrape's time, unless the line carried its own",
  );
  assert.equal(batch.duplicates, 1, "the second hits_total{kind=get} is dropped");
  assert.equal(sampleOf(batch, "up"), 1);
  assert.equal(sampleOf(batch, "scrape_duration_seconds"), 0.012);
  assert.equal(sampleOf(batch, "scrape_samples_scraped"), 4);
  assert.equal(batch.current.size, 2, "a series with its own timestamp is not followed for staleness");
  assert.equal(batch.staleMarkers, 0);
});

test("staleness: a series gone since the previous scrape gets a StaleNaN at this scrape's time", () => {
  const first = scrapeBatch(
    target,
    1_000_000_000_000,
    { ok: true, samples: parsePromText("a 1\nb 2\n").samples, durationMs: 1 },
    new Map(),
  );
  const second = scrapeBatch(
    target,
    1_000_000_015_000,
    { ok: true, samples: parsePromText("a 2\n").samples, durationMs: 1 },
    first.current,
  );
  assert.equal(second.staleMarkers, 1);
  const marker = second.series.find((s) => isStaleNaN(s.samples[0]!.v))!;
  assert.equal(labelsToRecord(marker.labels).__name__, "b");
  assert.equal(marker.samples[0]!.t, 1_000_000_015_000);
  assert.equal(sampleOf(second, "up"), 1);
  assert.deepEqual([...second.current.keys()], [seriesKey(first.series[0]!.labels)]);
});

test("staleness: a failed scrape is up 0, nothing scraped, and every series it had is marked stale", () => {
  const first = scrapeBatch(
    target,
    1_000_000_000_000,
    { ok: true, samples: parsePromText("a 1\nb 2\n").samples, durationMs: 1 },
    new Map(),
  );
  const dead = scrapeBatch(
    target,
    1_000_000_015_000,
    { ok: false, error: "connect ECONNREFUSED", durationMs: 2 },
    first.current,
  );
  assert.equal(sampleOf(dead, "up"), 0);
  assert.equal(sampleOf(dead, "scrape_samples_scraped"), 0);
  assert.equal(dead.staleMarkers, 2);
  assert.deepEqual(
    dead.series.filter((s) => isStaleNaN(s.samples[0]!.v)).map((s) => labelsToRecord(s.labels).__name__),
    ["a", "b"],
  );
  assert.equal(dead.current.size, 0);
  const still = scrapeBatch(
    target,
    1_000_000_030_000,
    { ok: false, error: "x", durationMs: 1 },
    dead.current,
  );
  assert.equal(still.staleMarkers, 0, "marked once, not at every failed scrape");
});
