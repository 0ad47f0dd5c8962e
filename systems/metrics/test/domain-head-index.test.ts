/**
 * The head block and its inverted index (MT-13, MT-16's refusal, MT-17): matchers of all four
 * kinds answered from postings and checked against a brute-force scan (fast-check), a series
 * is one label combination whose count is the product of value counts, the cardinality
 * ceilings refuse new series and keep old ones flowing, and a batch is all or nothing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { HeadBlock, type SeriesSamples } from "../src/domain/head-block.ts";
import { labelMatcher, type MatchType } from "../src/domain/label-matcher.ts";
import { type Labels, labelsFromRecord, seriesKey } from "../src/domain/labels.ts";
import { PostingsIndex } from "../src/domain/postings-index.ts";
import { isStaleNaN, STALE_NAN } from "../src/domain/staleness.ts";

const HOUR_MS = 3_600_000;
const roomy = { maxSeries: 1_000_000, maxSeriesPerMetric: 1_000_000 };

function series(record: Record<string, string>, samples: Array<[number, number]>): SeriesSamples {
  return { labels: labelsFromRecord(record), samples: samples.map(([t, v]) => ({ t, v })) };
}

function append(head: HeadBlock, batch: SeriesSamples[]) {
  const plan = head.plan(batch);
  if (plan.ok) head.commit(plan);
  return plan;
}

test("MT-17 postings answer every matcher kind exactly as a scan of all series does", () => {
  const values = ["", "a", "b", "ab", "c"];
  const labelSet = fc.record({ x: fc.constantFrom(...values), y: fc.constantFrom(...values) });
  const matcher = fc.tuple(
    fc.constantFrom<MatchType>("=", "!=", "=~", "!~"),
    fc.constantFrom("x", "y", "z"),
    fc.constantFrom("", "a", "a.*", "b|c", ".+", ".*"),
  );
  fc.assert(
    fc.property(
      fc.array(labelSet, { maxLength: 40 }),
      fc.array(matcher, { minLength: 1, maxLength: 3 }),
      (sets, ms) => {
        const index = new PostingsIndex();
        const all: Labels[] = [];
        const seen = new Set<string>();
        for (const set of sets) {
          const labels = labelsFromRecord({ __name__: "m", ...set });
          if (seen.has(seriesKey(labels))) continue;
          seen.add(seriesKey(labels));
          all.push(labels);
          index.add(all.length, labels);
        }
        const matchers = ms.map(([type, name, value]) => labelMatcher(type, name, value));
        const expected = all
          .map((labels, i) => ({ labels, ref: i + 1 }))
          .filter(({ labels }) =>
            matchers.every((m) => m.matches(labels.find(([n]) => n === m.name)?.[1] ?? "")),
          )
          .map(({ ref }) => ref);
        assert.deepEqual(index.select(matchers), expected);
      },
    ),
    { numRuns: 300 },
  );
});

test("MT-13 a series is one combination of label values: the count is the product of the value counts, not the metric count", () => {
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: roomy });
  const batch: SeriesSamples[] = [];
  for (let host = 0; host < 10; host++)
    for (let endpoint = 0; endpoint < 5; endpoint++)
      for (const status of ["200", "404", "500"])
        batch.push(
          series({ __name__: "http_requests_total", host: `h${host}`, endpoint: `/e${endpoint}`, status }, [
            [1, 1],
          ]),
        );
  // Writing the same combinations again adds samples, never series.
  assert.equal(append(head, batch).ok, true);
  assert.equal(
    append(
      head,
      batch.map((s) => ({ ...s, samples: [{ t: 2, v: 2 }] })),
    ).ok,
    true,
  );
  assert.equal(head.seriesCount, 10 * 5 * 3);
  assert.equal(head.sampleCount, 2 * 150);
  // One more tag with 20 values multiplies the series by 20: the index grows with the product.
  const withUser = batch.flatMap((s) =>
    Array.from({ length: 20 }, (_, u) => ({
      labels: labelsFromRecord({ ...Object.fromEntries(s.labels), user_id: `u${u}` }),
      samples: [{ t: 3, v: 1 }],
    })),
  );
  assert.equal(append(head, withUser).ok, true);
  assert.equal(head.seriesCount, 150 + 150 * 20);
  assert.equal(head.index.valueCounts().get("user_id"), 20);
});

test("MT-13 two different label sets never share a series key, whatever their values hold (ÿ = U+00FF is the key's separator)", () => {
  // Under the plain "name ÿ value ÿ …" join these two were one key, so one head series.
  const forged = labelsFromRecord({ __name__: "m", a: "1\xffb\xff2" });
  const honest = labelsFromRecord({ __name__: "m", a: "1", b: "2" });
  assert.notEqual(seriesKey(forged), seriesKey(honest));
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: roomy });
  const plan = append(head, [
    { labels: forged, samples: [{ t: 1_000, v: 1 }] },
    { labels: honest, samples: [{ t: 1_000, v: 2 }] },
  ]);
  assert.ok(plan.ok, "two series, not one sample written twice at the same time");
  assert.equal(head.seriesCount, 2);
  // Any values (the separator, its escape, both in a row): equal keys only for equal sets.
  const value = fc.string({ unit: fc.constantFrom("a", "b", "\xff", "\xfe", "=", ""), maxLength: 6 });
  const labelSet = fc.dictionary(fc.constantFrom("a", "b", "c"), value, { maxKeys: 3 });
  fc.assert(
    fc.property(labelSet, labelSet, (x, y) => {
      const [lx, ly] = [labelsFromRecord({ __name__: "m", ...x }), labelsFromRecord({ __name__: "m", ...y })];
      assert.equal(seriesKey(lx) === seriesKey(ly), JSON.stringify(lx) === JSON.stringify(ly));
    }),
    { numRuns: 2_000 },
  );
  // Values without either character keep the key they always had (stored rollup keys, partitions).
  assert.equal(seriesKey(labelsFromRecord({ __name__: "up", job: "api" })), "__name__\xffup\xffjob\xffapi");
});

test("MT-16 the per-metric ceiling refuses a new series and the tenant's ceiling refuses any; existing series keep flowing", () => {
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: { maxSeries: 5, maxSeriesPerMetric: 3 } });
  for (let i = 0; i < 3; i++)
    assert.equal(append(head, [series({ __name__: "req", user: `u${i}` }, [[1, 1]])]).ok, true);
  const refused = head.plan([series({ __name__: "req", user: "u3" }, [[2, 1]])]);
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.code, "METRIC_SERIES_LIMIT");
  assert.equal(
    append(head, [series({ __name__: "req", user: "u0" }, [[2, 1]])]).ok,
    true,
    "an existing series still takes samples",
  );
  assert.equal(
    append(head, [
      series({ __name__: "other", a: "1" }, [[1, 1]]),
      series({ __name__: "other", a: "2" }, [[1, 1]]),
    ]).ok,
    true,
  );
  const tenantFull = head.plan([series({ __name__: "third" }, [[1, 1]])]);
  assert.equal(!tenantFull.ok && tenantFull.code, "SERIES_LIMIT");
  assert.equal(head.seriesCount, 5);
});

test("MT-17 a batch with one bad sample changes nothing; an exact repeat is accepted and skipped", () => {
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: roomy });
  assert.equal(
    append(head, [
      series({ __name__: "a" }, [
        [10, 1],
        [20, 2],
      ]),
    ]).ok,
    true,
  );
  const before = head.select([labelMatcher("=~", "__name__", ".+")], 0, 100);
  for (const bad of [
    [series({ __name__: "new" }, [[5, 1]]), series({ __name__: "a" }, [[15, 1]])],
    [
      series({ __name__: "a" }, [
        [30, 1],
        [25, 2],
      ]),
    ],
    [series({ __name__: "a" }, [[20, 3]])],
  ]) {
    const plan = head.plan(bad);
    assert.equal(plan.ok, false);
  }
  assert.deepEqual(head.select([labelMatcher("=~", "__name__", ".+")], 0, 100), before);
  assert.equal(head.seriesCount, 1);
  assert.equal(
    append(head, [
      series({ __name__: "a" }, [
        [20, 2],
        [30, 3],
      ]),
    ]).ok,
    true,
  );
  assert.deepEqual(head.select([labelMatcher("=", "__name__", "a")], 0, 100)[0]!.timestamps, [10, 20, 30]);
});

test("MT-17 chunks are cut at 120 samples and at block boundaries; truncation hands whole chunks to a block", () => {
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: roomy });
  const samples: Array<[number, number]> = [];
  for (let t = 0; t < 3 * HOUR_MS; t += 15_000) samples.push([t, t / 1000]);
  const g = series({ __name__: "g" }, samples);
  // An object keeps the NaN's payload; a [t, v] array literal of doubles would canonicalise it.
  const batch = [{ labels: g.labels, samples: [...g.samples, { t: 3 * HOUR_MS, v: STALE_NAN }] }];
  assert.equal(append(head, batch).ok, true);
  const taken = head.truncateBefore(2 * HOUR_MS);
  assert.equal(taken.length, 1);
  const takenSamples = taken[0]!.chunks.reduce((n, c) => n + c.count, 0);
  assert.equal(takenSamples, (2 * HOUR_MS) / 15_000);
  assert.ok(taken[0]!.chunks.every((c) => c.count <= 120 && c.maxT < 2 * HOUR_MS));
  const rest = head.select([labelMatcher("=", "__name__", "g")], 0, Number.POSITIVE_INFINITY)[0]!;
  assert.equal(rest.timestamps[0], 2 * HOUR_MS);
  assert.equal(isStaleNaN(rest.values[rest.values.length - 1]!), true, "StaleNaN survives the head");
  assert.equal(head.plan([series({ __name__: "g2" }, [[HOUR_MS, 1]])]).ok, false, "below minValidT");
});

test("MT-13 the head's time range follows appends, and a truncation, and the appends after it", () => {
  const head = new HeadBlock({ blockRangeMs: 2 * HOUR_MS, limits: roomy });
  assert.equal(head.timeRange(), undefined, "empty");
  append(head, [
    series({ __name__: "up", i: "a" }, [
      [HOUR_MS, 1],
      [3 * HOUR_MS, 1],
    ]),
  ]);
  append(head, [series({ __name__: "up", i: "b" }, [[2 * HOUR_MS, 1]])]);
  assert.deepEqual(head.timeRange(), { mint: HOUR_MS, maxt: 3 * HOUR_MS });
  const held = head.timeRange()!;
  append(head, [series({ __name__: "up", i: "b" }, [[5 * HOUR_MS, 1]])]);
  assert.deepEqual(
    held,
    { mint: HOUR_MS, maxt: 3 * HOUR_MS },
    "a range handed out does not change under its holder",
  );
  head.truncateBefore(2 * HOUR_MS);
  assert.deepEqual(
    head.timeRange(),
    { mint: 2 * HOUR_MS, maxt: 5 * HOUR_MS },
    "the hour before the boundary is gone",
  );
  append(head, [series({ __name__: "up", i: "a" }, [[6 * HOUR_MS, 1]])]);
  assert.deepEqual(head.timeRange(), { mint: 2 * HOUR_MS, maxt: 6 * HOUR_MS });
  head.truncateBefore(8 * HOUR_MS);
  assert.equal(head.timeRange(), undefined, "everything truncated");
});
