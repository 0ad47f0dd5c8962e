/**
 * MT-12 through the whole system (in-process stream): remote-write → stream → hot writer and
 * rollup builder; `/api/v1/query_range` picks the tier by step and by what each tier holds —
 * a 15 s panel reaching past the raw retention (1 h here) is answered by the 1 min tier before
 * it and by the raw tier after, in one matrix; a 1 h step reads the Parquet 1 h tier (MT-11:
 * the spike is its max); `rate`/`increase` of a counter with resets are answered by the 1 min
 * and 1 h tiers as the raw samples answer them (differential: the same series evaluated over its
 * raw samples); a query a rollup tier cannot answer is refused with a 400 naming it.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { TIERS_HEADER } from "../src/api/query-routes.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { PromqlEngine } from "../src/domain/promql-engine.ts";
import { parsePromql } from "../src/domain/promql-parser.ts";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { ONE_HOUR_MS, ONE_MINUTE_MS } from "../src/domain/rollup.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { main, type RunningSystem } from "../src/main.ts";

const STEP_MS = 10_000;
const NOW = Date.now();
/** Data from 3 whole hours before the current hour until now. */
const BASE = Math.floor(NOW / ONE_HOUR_MS) * ONE_HOUR_MS - 3 * ONE_HOUR_MS;
const SPIKE_T = BASE + ONE_HOUR_MS + 17 * ONE_MINUTE_MS + 30_000;
const SPIKE = 5_000;
const HOSTS = ["a", "b"];

function sampleValue(host: number, t: number): number {
  if (host === 0 && t === SPIKE_T) return SPIKE;
  return 100 * host + ((t / STEP_MS) % 13) + Math.cos(t / 900_000);
}

/**
 * A counter beside cpu, 3 s off its grid (no sample on a window's edge, so a window-aligned
 * range holds the same samples on every tier), reset inside a minute and at a minute's first
 * sample past the raw retention, inside an hour and at an hour's first sample, and twice
 * within the raw retention.
 */
const COUNTER_OFFSET_MS = 3_000;
const COUNTER_RESETS = new Set([
  BASE + ONE_HOUR_MS + 10 * ONE_MINUTE_MS + 33_000,
  BASE + ONE_HOUR_MS + 40 * ONE_MINUTE_MS + COUNTER_OFFSET_MS,
  BASE + 2 * ONE_HOUR_MS + COUNTER_OFFSET_MS,
  Math.floor((NOW - BASE - 20 * ONE_MINUTE_MS) / STEP_MS) * STEP_MS + BASE + COUNTER_OFFSET_MS,
  Math.floor((NOW - BASE - 8 * ONE_MINUTE_MS) / STEP_MS) * STEP_MS + BASE + COUNTER_OFFSET_MS,
]);
const COUNTER_LABELS = labelsFromRecord({ __name__: "requests_total", host: "a" });
const COUNTER: Array<{ t: number; v: number }> = [];
for (let t = BASE + COUNTER_OFFSET_MS, v = 1_000; t <= NOW; t += STEP_MS) {
  v = COUNTER_RESETS.has(t) ? (t % 7) / 2 : v + ((t / STEP_MS) % 7) + 0.25;
  COUNTER.push({ t, v });
}
/** The oracle: PromQL over the counter's raw samples (the engine the differential checks against Prometheus). */
const counterOverRaw = new PromqlEngine({
  select: () => [
    { labels: COUNTER_LABELS, timestamps: COUNTER.map((s) => s.t), values: COUNTER.map((s) => s.v) },
  ],
});

let running: RunningSystem;
let dataDir: string;
let key: string;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-router-"));
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_PARTITIONS: "2",
    METRICS_RAW_RETENTION_MS: String(ONE_HOUR_MS),
    METRICS_ROLLUP_LATENESS_MS: "60000",
    METRICS_ROLLUP_CLOSE_INTERVAL_MS: "200",
  });
  key = running.bootstrap!.apiKey;
  const newest = Math.floor((NOW - BASE) / STEP_MS);
  for (let from = 0; from <= newest; from += 240) {
    const series = HOSTS.map((host, h) => ({
      labels: labelsFromRecord({ __name__: "cpu", host }),
      samples: Array.from({ length: Math.min(240, newest - from + 1) }, (_, i) => {
        const t = BASE + (from + i) * STEP_MS;
        return { t, v: sampleValue(h, t) };
      }),
    }));
    series.push({ labels: COUNTER_LABELS, samples: COUNTER.slice(from, from + 240) });
    const response = await running.service.app.inject({
      method: "POST",
      url: "/api/v1/write",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/x-protobuf",
        "content-encoding": "snappy",
      },
      payload: Buffer.from(snappyCompress(encodeWriteRequest(series))),
    });
    assert.equal(response.statusCode, 204, response.body);
  }
  // Every series' newest sample stored: the hot writers' partitions apply the writes each on its
  // own (cpu{host="a"} and the other two go to different ones), and a test that waits for the
  // rollup builder learns nothing about the raw tier, whose span is the retention whatever is there.
  const newestMs = async (query: string, host: string) => {
    const { body } = await queryAt(`timestamp(${query})`, NOW);
    const series = (body.data?.result ?? []) as Array<{
      metric: Record<string, string>;
      value: [number, string];
    }>;
    const found = series.find((s) => s.metric.host === host);
    return found === undefined ? undefined : Math.round(Number(found.value[1]) * 1000);
  };
  const newestT = BASE + newest * STEP_MS;
  await eventually(
    async () =>
      (await newestMs("cpu", "a")) === newestT &&
      (await newestMs("cpu", "b")) === newestT &&
      (await newestMs("requests_total", "a")) === COUNTER.at(-1)!.t,
    { what: "every series' newest sample stored", timeoutMs: 30_000 },
  );
});
after(async () => {
  await running?.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function queryAt(query: string, timeMs: number) {
  const response = await running.service.app.inject({
    method: "GET",
    url: `/api/v1/query?${new URLSearchParams({ query, time: String(timeMs / 1000) })}`,
    headers: { authorization: `Bearer ${key}` },
  });
  return {
    status: response.statusCode,
    body: response.json(),
    tier: String(response.headers[TIERS_HEADER] ?? ""),
  };
}

async function queryRange(query: string, startMs: number, endMs: number, step: string) {
  const response = await running.service.app.inject({
    method: "GET",
    url: `/api/v1/query_range?${new URLSearchParams({ query, start: String(startMs / 1000), end: String(endMs / 1000), step })}`,
    headers: { authorization: `Bearer ${key}` },
  });
  const body = response.json();
  const tiers = String(response.headers[TIERS_HEADER] ?? "")
    .split(", ")
    .filter((s) => s !== "")
    .map((s) => {
      const [tier, span] = s.split(";");
      const [from, to] = span!.split("-").map((x) => Number(x) * 1000);
      return { tier: tier!, from: from!, to: to! };
    });
  return { status: response.statusCode, body, tiers };
}

function valuesOf(
  body: { data: { result: Array<{ metric: Record<string, string>; values: [number, string][] }> } },
  host: string,
) {
  const series = body.data.result.find((s) => s.metric.host === host);
  return new Map(series?.values.map(([t, v]) => [Math.round(t * 1000), Number(v)]) ?? []);
}

/**
 * The raw samples written for a host in [from, to): from BASE to NOW only. A 3 h window of a
 * step up to 10 min before NOW reaches before BASE when NOW is in its hour's first 10 min:
 * nothing was written there (counting it failed the MT-12 panel test at H:00–H:10).
 */
function rawIn(host: number, from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = Math.ceil((Math.max(from, BASE) - BASE) / STEP_MS) * STEP_MS + BASE; t < to; t += STEP_MS) {
    if (t <= NOW) out.push(sampleValue(host, t));
  }
  return out;
}

test("MT-12 a 15 s panel crossing the raw retention: the 1 min tier before it, the raw tier after, stitched in one matrix", async () => {
  const start = BASE + 90 * ONE_MINUTE_MS;
  const end = start + Math.floor((NOW - 2 * ONE_MINUTE_MS - start) / 15_000) * 15_000;
  const answer = await eventually(
    async () => {
      const a = await queryRange("cpu", start, end, "15s");
      // Caught up: the 1 min tier reaches the raw retention's edge.
      return a.tiers[0]?.tier === "1m" && a.tiers[0].to >= NOW - ONE_HOUR_MS - 15_000 ? a : undefined;
    },
    { what: "the 1 min tier built and the raw tier written", timeoutMs: 30_000 },
  );
  assert.equal(answer.status, 200);
  assert.deepEqual(
    answer.tiers.map((s) => s.tier),
    ["1m", "raw"],
  );
  const [minute, raw] = answer.tiers as [(typeof answer.tiers)[0], (typeof answer.tiers)[0]];
  assert.equal(minute.from, start);
  assert.equal(raw.to, end);
  // The split sits at the raw retention (now − 1 h), give or take the time the test took.
  const split = raw.from;
  assert.ok(split >= NOW - ONE_HOUR_MS && split <= Date.now() - ONE_HOUR_MS + 15_000, `split at ${split}`);
  const values = valuesOf(answer.body, "a");
  assert.equal(values.size, (end - start) / 15_000 + 1, "one value per step, no gap at the seam");
  let checked = 0;
  for (const [t, v] of values) {
    if (t <= minute.to) {
      // The 1 min tier: the newest complete window's mean (sum / count).
      const windowEnd = Math.floor(t / ONE_MINUTE_MS) * ONE_MINUTE_MS;
      const samples = rawIn(0, windowEnd - ONE_MINUTE_MS, windowEnd);
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      assert.ok(Math.abs(v - mean) < 1e-9, `1m at ${t}: ${v} vs mean ${mean}`);
    } else {
      // The raw tier: the newest sample at or before t.
      assert.equal(v, sampleValue(0, Math.floor((t - BASE) / STEP_MS) * STEP_MS + BASE), `raw at ${t}`);
    }
    checked++;
  }
  assert.ok(checked > 300);
});

test("MT-12 MT-11 a 1 h step reads the 1 h tier (Parquet): max_over_time keeps the 10 s spike, avg_over_time the true mean", async () => {
  const start = BASE + ONE_HOUR_MS;
  const end = BASE + 2 * ONE_HOUR_MS;
  const answer = await eventually(
    async () => {
      const a = await queryRange("max_over_time(cpu[1h])", start, end, "1h");
      return a.tiers.length === 1 && a.tiers[0]!.tier === "1h" && valuesOf(a.body, "a").size === 2
        ? a
        : undefined;
    },
    { what: "hours 0 and 1 written to Parquet", timeoutMs: 30_000 },
  );
  const max = valuesOf(answer.body, "a");
  assert.equal(max.get(end), SPIKE, "the spike is the hour's max");
  assert.equal(max.get(start), Math.max(...rawIn(0, BASE, start)));
  const avg = valuesOf((await queryRange("avg_over_time(cpu[1h])", start, end, "1h")).body, "b");
  const samples = rawIn(1, start, end);
  assert.ok(Math.abs(avg.get(end)! - samples.reduce((a, b) => a + b, 0) / samples.length) < 1e-9);
  const count = await queryRange("sum(count_over_time(cpu[1h]))", start, end, "1h");
  assert.deepEqual(count.body.data.result[0].values, [
    [start / 1000, "720"],
    [end / 1000, "720"],
  ]);
});

test("MT-12 a function a rollup tier cannot answer is refused with a 400 naming it; a year at 1 h goes to the cold tier", async () => {
  const refused = await queryRange("irate(cpu[5m])", BASE, BASE + 2 * ONE_HOUR_MS, "5m");
  assert.equal(refused.status, 400);
  assert.equal(refused.body.errorType, "bad_data");
  assert.match(refused.body.error, /irate\(\) cannot be answered from the 1m tier/);
  const year = await queryRange("max_over_time(cpu[1h])", NOW - 365 * 24 * ONE_HOUR_MS, NOW, "1d");
  assert.equal(year.status, 200);
  assert.equal(year.tiers[0]!.tier, "1h");
  // Raw-sized steps inside the raw retention stay on the hot tier, rate included.
  const recent = await queryRange("rate(cpu[5m])", NOW - 30 * ONE_MINUTE_MS, NOW, "30s");
  assert.equal(recent.status, 200);
  assert.deepEqual(
    recent.tiers.map((s) => s.tier),
    ["raw"],
  );
});

test("MT-12 an instant query reading past the raw retention is answered by the 1 min tier, its newest minutes rolled up from raw: the same max and count as the raw samples", async () => {
  const at = Math.floor(Date.now() / 1000) * 1000;
  const reach = 3 * ONE_HOUR_MS;
  // The minutes of the 3 h window, from the one holding its first ms (a rollup point is the
  // whole window), to the newest raw sample: nothing of the unclosed tail may be missing.
  const from = Math.floor((at - reach) / ONE_MINUTE_MS) * ONE_MINUTE_MS;
  await eventually(
    async () => {
      const minute = await queryRange(
        "count_over_time(cpu[1m])",
        at - 2 * ONE_HOUR_MS,
        at - 2 * ONE_HOUR_MS,
        "1m",
      );
      return minute.tiers[0]?.tier === "1m" && valuesOf(minute.body, "a").size === 1 ? true : undefined;
    },
    { what: "the 1 min tier built", timeoutMs: 30_000 },
  );
  const max = await queryAt("max_over_time(cpu[3h])", at);
  assert.equal(max.status, 200, JSON.stringify(max.body));
  assert.equal(max.tier, `1m;${at / 1000}-${at / 1000}`);
  const byHost = (body: {
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  }) => new Map(body.data.result.map((r) => [r.metric.host, Number(r.value[1])]));
  assert.equal(
    byHost(max.body).get("a"),
    SPIKE,
    "the spike, 1 h 43 min or more back, past the raw retention",
  );
  assert.equal(byHost(max.body).get("b"), Math.max(...rawIn(1, from, at + 1)));
  const count = await queryAt("count_over_time(cpu[3h])", at);
  assert.equal(count.tier, `1m;${at / 1000}-${at / 1000}`);
  assert.equal(
    byHost(count.body).get("a"),
    rawIn(0, from, at + 1).length,
    "every sample, the unclosed minutes included",
  );
  // Within the raw retention, raw answers (irate included); past it, irate is refused by name.
  const recent = await queryAt("max_over_time(cpu[30m])", at);
  assert.equal(recent.tier, `raw;${at / 1000}-${at / 1000}`);
  assert.equal(byHost(recent.body).get("b"), Math.max(...rawIn(1, at - 30 * ONE_MINUTE_MS, at + 1)));
  assert.equal((await queryAt("irate(cpu[5m])", at)).status, 200);
  const refused = await queryAt("irate(cpu[3h])", at);
  assert.equal(refused.status, 400);
  assert.match(refused.body.error, /irate\(\) cannot be answered from the 1m tier/);
  // An increase over 3 h at a minute's edge: the 1 min tier, its newest minutes from raw —
  // Prometheus's answer over the raw samples, the counter's four resets in that reach included.
  const minuteAt = Math.floor(at / ONE_MINUTE_MS) * ONE_MINUTE_MS;
  const increase = await queryAt("increase(requests_total[3h])", minuteAt);
  assert.equal(increase.tier, `1m;${minuteAt / 1000}-${minuteAt / 1000}`);
  const want = counterOverRaw.instant(parsePromql("increase(requests_total[3h])"), minuteAt);
  assert.ok(want.type === "vector");
  assertClose(byHost(increase.body).get("a")!, want.samples[0]!.v, "increase(requests_total[3h])");
});

test("MT-12 a 15 s panel of max_over_time(cpu[3h]) reads past the raw retention: the 1 min tier answers every step, its newest minutes from raw", async () => {
  const end = Math.floor(Date.now() / ONE_MINUTE_MS) * ONE_MINUTE_MS;
  const start = end - 10 * ONE_MINUTE_MS;
  // A step sees the whole windows stamped (at their last ms) by then: from the one holding
  // t − 3 h up to t (a sample exactly at t excluded, as on any rollup tier); the last step also
  // the open window, stamped at the query's end.
  const windowOf = (t: number) =>
    [Math.floor((t - 3 * ONE_HOUR_MS) / ONE_MINUTE_MS) * ONE_MINUTE_MS, t === end ? t + 1 : t] as const;
  const max = await queryRange("max_over_time(cpu[3h])", start, end, "15s");
  assert.equal(max.status, 200, JSON.stringify(max.body));
  assert.deepEqual(
    max.tiers.map((s) => [s.tier, s.from, s.to]),
    [["1m", start, end]],
  );
  const [a, b] = [valuesOf(max.body, "a"), valuesOf(max.body, "b")];
  assert.equal(a.size, 41);
  for (const [t, v] of a) assert.equal(v, SPIKE, `a at ${t}: the spike, past the raw retention`);
  const count = valuesOf((await queryRange("count_over_time(cpu[3h])", start, end, "15s")).body, "a");
  for (let t = start; t <= end; t += ONE_MINUTE_MS) {
    assert.equal(b.get(t), Math.max(...rawIn(1, ...windowOf(t))), `max b at ${t}`);
    assert.equal(count.get(t), rawIn(0, ...windowOf(t)).length, `count at ${t}: the raw tail included`);
  }
  // A rate panel reaching past the raw retention: the 1 min tier too, every minute's step
  // Prometheus's answer over the raw samples; an irate panel keeps its raw steps.
  const rate = await queryRange("rate(requests_total[3h])", start, end, "15s");
  assert.equal(rate.status, 200, JSON.stringify(rate.body));
  assert.deepEqual(
    rate.tiers.map((s) => [s.tier, s.from, s.to]),
    [["1m", start, end]],
  );
  const rates = valuesOf(rate.body, "a");
  for (let t = start; t <= end; t += ONE_MINUTE_MS) {
    const want = counterOverRaw.instant(parsePromql("rate(requests_total[3h])"), t);
    assert.ok(want.type === "vector");
    assertClose(rates.get(t)!, want.samples[0]!.v, `rate at ${t}`);
  }
  const irate = await queryRange("irate(cpu[3h])", start, end, "15s");
  assert.equal(irate.status, 200);
  assert.deepEqual(
    irate.tiers.map((s) => s.tier),
    ["raw"],
  );
});

test("MT-12 MT-11 rate and increase of a counter with resets over the 1 min and 1 h tiers equal Prometheus's answer over the raw samples (differential), the newest steps stitched from raw", async () => {
  // A 5 min step over hours 0–2: the 1 min tier up to where it has closed, raw after.
  const start = BASE + 10 * ONE_MINUTE_MS;
  const end = start + Math.floor((NOW - 5 * ONE_MINUTE_MS - start) / (5 * ONE_MINUTE_MS)) * 5 * ONE_MINUTE_MS;
  for (const query of ["rate(requests_total[5m])", "increase(requests_total[30m])"]) {
    const answer = await eventually(
      async () => {
        const a = await queryRange(query, start, end, "5m");
        return a.tiers[0]?.tier === "1m" && a.tiers[0].to >= NOW - ONE_HOUR_MS ? a : undefined;
      },
      { what: "the 1 min tier built past the raw retention", timeoutMs: 30_000 },
    );
    assert.equal(answer.status, 200);
    const values = valuesOf(answer.body, "a");
    const want = counterOverRaw.range(parsePromql(query), {
      startMs: start,
      endMs: end,
      stepMs: 5 * ONE_MINUTE_MS,
    });
    assert.ok(want.type === "matrix");
    const wanted = new Map(want.series[0]!.ts.map((t, i) => [t, want.series[0]!.vs[i]!]));
    assert.deepEqual([...values.keys()], [...wanted.keys()], `${query}: the same steps`);
    for (const [t, v] of values) assertClose(v, wanted.get(t)!, `${query} at ${t}`);
  }
  // A 1 h step reads the Parquet 1 h tier: increase over each closed hour, resets included.
  const hours = await eventually(
    async () => {
      const a = await queryRange(
        "increase(requests_total[1h])",
        BASE + ONE_HOUR_MS,
        BASE + 2 * ONE_HOUR_MS,
        "1h",
      );
      return a.tiers.length === 1 && a.tiers[0]!.tier === "1h" && valuesOf(a.body, "a").size === 2
        ? a
        : undefined;
    },
    { what: "hours 0 and 1 written to Parquet", timeoutMs: 30_000 },
  );
  for (const [t, v] of valuesOf(hours.body, "a")) {
    const want = counterOverRaw.instant(parsePromql("increase(requests_total[1h])"), t);
    assert.ok(want.type === "vector");
    assertClose(v, want.samples[0]!.v, `1 h increase at ${t}`);
  }
});

/**
 * Equal to the raw answer as printed: the same samples and the same arithmetic, except that the
 * values before resets are summed per window first (another grouping: the last bits).
 */
function assertClose(got: number, want: number, what: string) {
  assert.ok(
    Number.isFinite(got) && Math.abs(got - want) <= 1e-12 * Math.abs(want),
    `${what}: ${got} vs ${want}`,
  );
}
