import assert from "node:assert/strict";
import { test } from "node:test";
import { isStaleNaN, STALE_NAN } from "../src/domain/staleness.ts";
import {
  decodeStreamBatch,
  encodeLabelBlock,
  encodeStreamBatch,
  STREAM_BATCH_VERSION,
} from "../src/domain/stream-batch.ts";

const series = [
  {
    labels: [
      ["__name__", "node_cpu_seconds_total"],
      ["instance", "host-1"],
      ["mode", "idle"],
    ] as const,
    samples: [
      { t: 1_700_000_000_000, v: 1.5 },
      { t: 1_700_000_015_002, v: 3.25 },
      { t: 1_700_000_029_998, v: STALE_NAN },
      { t: 1_700_000_045_000, v: Number.NaN },
      { t: 1_700_000_060_000, v: Number.POSITIVE_INFINITY },
      { t: 1_700_000_075_000, v: -0 },
    ],
  },
  {
    labels: [
      ["__name__", "up"],
      ["instance", "host-1"],
    ] as const,
    samples: [{ t: -5, v: -1e308 }],
  },
  { labels: [["__name__", "empty"]] as const, samples: [] },
];

test("a stream batch comes back with the same labels, timestamps and value bits", () => {
  const bytes = encodeStreamBatch({ tenant: "acme", partition: 11, series });
  assert.equal(bytes[0], STREAM_BATCH_VERSION);
  const decoded = decodeStreamBatch(bytes);
  assert.equal(decoded.tenant, "acme");
  assert.equal(decoded.partition, 11);
  assert.deepEqual(
    decoded.series.map((s) => s.labels),
    series.map((s) => s.labels),
  );
  assert.deepEqual(
    decoded.series.map((s) => s.samples.map((x) => x.t)),
    series.map((s) => s.samples.map((x) => x.t)),
  );
  // Read each value off its sample: an array of numbers may store a NaN canonicalised.
  const values = decoded.series[0]!.samples;
  const v = (i: number) => values[i]!.v;
  assert.equal(v(0), 1.5);
  assert.equal(v(1), 3.25);
  assert.ok(isStaleNaN(v(2)), "the staleness marker keeps its bits");
  assert.ok(Number.isNaN(v(3)) && !isStaleNaN(v(3)), "an ordinary NaN stays ordinary");
  assert.equal(v(4), Number.POSITIVE_INFINITY);
  assert.ok(Object.is(v(5), -0));
  assert.equal(decoded.series[1]!.samples[0]!.v, -1e308);
});

test("a stream batch keeps label text in any UTF-8, short or long, ASCII or not", () => {
  const texts = ["café", "日本語のラベル", "a".repeat(64), "b".repeat(200), `${"é".repeat(40)}x`, "😀", ""];
  const labelled = texts.map((text, i) => ({
    labels: [
      ["__name__", `m${i}`],
      ["v", text],
    ] as const,
    samples: [{ t: 1, v: 1 }],
  }));
  const decoded = decodeStreamBatch(encodeStreamBatch({ tenant: "acme", partition: 0, series: labelled }));
  assert.deepEqual(
    decoded.series.map((s) => s.labels),
    labelled.map((s) => s.labels),
  );
});

test("a stream batch is smaller than the JSON it replaced, and a series' label block is the same bytes in every message", () => {
  const many = Array.from({ length: 100 }, (_, i) => ({
    labels: [
      ["__name__", `node_metric_${i % 10}`],
      ["instance", "host-1:9100"],
      ["job", "node"],
    ] as const,
    samples: Array.from({ length: 4 }, (_, k) => ({ t: 1_700_000_000_000 + k * 15_000, v: i * 1.25 + k })),
  }));
  const binary = encodeStreamBatch({ tenant: "acme", partition: 0, series: many });
  const json = JSON.stringify({
    tenant: "acme",
    partition: 0,
    series: many.map((s) => ({
      labels: s.labels,
      t: s.samples.map((x) => x.t),
      v: s.samples.map((x) => x.v),
    })),
  });
  // Each series carries its label text (no string table shared by the message): the price of
  // interning series by those bytes downstream. Still well under the JSON, values bit-exact.
  assert.ok(binary.length * 1.5 < json.length, `${binary.length} B binary vs ${json.length} B JSON`);
  const block = encodeLabelBlock(many[7]!.labels);
  const again = encodeStreamBatch({ tenant: "acme", partition: 0, series: [many[7]!] });
  const at = (bytes: Uint8Array) => Buffer.from(bytes).indexOf(Buffer.from(block));
  assert.ok(at(binary) > 0 && at(again) > 0, "the block appears as is in both messages");
});

test("a message in the JSON form of before the binary one still decodes", () => {
  const json = JSON.stringify({
    tenant: "acme",
    partition: 2,
    series: [{ labels: [["__name__", "up"]], t: [1000, 2000], v: [1, "stale"] }],
  });
  const decoded = decodeStreamBatch(new TextEncoder().encode(json));
  assert.equal(decoded.tenant, "acme");
  assert.equal(decoded.series[0]!.samples[0]!.v, 1);
  assert.ok(isStaleNaN(decoded.series[0]!.samples[1]!.v));
});

test("a foreign or cut message is a RangeError naming what is wrong", () => {
  const bytes = encodeStreamBatch({ tenant: "acme", partition: 1, series });
  assert.throws(() => decodeStreamBatch(new Uint8Array([1, 2, 3])), /stream batch: unknown format/);
  assert.throws(() => decodeStreamBatch(new Uint8Array()), /stream batch: unknown format/);
  for (const cut of [2, 10, bytes.length - 1]) {
    assert.throws(() => decodeStreamBatch(bytes.subarray(0, cut)), /stream batch: /, `cut at ${cut}`);
  }
  const longer = new Uint8Array(bytes.length + 1);
  longer.set(bytes);
  assert.throws(() => decodeStreamBatch(longer), /stream batch: 1 bytes after the last series/);
  assert.throws(() => decodeStreamBatch(new TextEncoder().encode("{nope")), /stream batch: not JSON/);
});

test("with keep, a refused series is left out and its samples stepped over; the others and the checks are unchanged", () => {
  const bytes = encodeStreamBatch({ tenant: "acme", partition: 4, series });
  const keepUp = { keep: (labels: readonly (readonly [string, string])[]) => labels[0]![1] === "up" };
  const kept = decodeStreamBatch(bytes, keepUp);
  assert.deepEqual(
    kept.series,
    decodeStreamBatch(bytes).series.filter((s) => s.labels[0]![1] === "up"),
  );
  assert.equal(decodeStreamBatch(bytes, { keep: () => false }).series.length, 0);
  // A message cut inside a skipped series' samples still fails whole.
  for (const cut of [bytes.length - 1, bytes.length - 30]) {
    assert.throws(() => decodeStreamBatch(bytes.subarray(0, cut), keepUp), /stream batch: /, `cut at ${cut}`);
  }
  const json = new TextEncoder().encode(
    JSON.stringify({
      tenant: "acme",
      partition: 2,
      series: [
        { labels: [["__name__", "up"]], t: [1000], v: [1] },
        { labels: [["__name__", "down"]], t: [1000], v: [1] },
      ],
    }),
  );
  assert.deepEqual(
    decodeStreamBatch(json, keepUp).series.map((s) => s.labels[0]![1]),
    ["up"],
  );
});
