/**
 * The ingest's wire and validation (MT-05/06): the snappy codec and the hand-written
 * remote-write protobuf decoder round-trip any batch (fast-check), refuse malformed bytes with
 * a RangeError (never a crash or a partial read), validation names the field at fault, and the
 * series → partition hash is a pure function of the label set, spread evenly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { validateBatch } from "../src/domain/ingest-batch.ts";
import { labelsFromPairs } from "../src/domain/labels.ts";
import { decodeWriteRequest, encodeWriteRequest } from "../src/domain/remote-write.ts";
import { partitionOf, splitByPartition } from "../src/domain/series-partition.ts";
import { snappyCompress, snappyUncompress } from "../src/domain/snappy.ts";
import { isStaleNaN, STALE_NAN } from "../src/domain/staleness.ts";

const limits = { maxSeries: 100_000, maxSamples: 1_000_000 };

test("MT-05 snappy round-trips any bytes, repetitive or not", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 3_000 }),
        fc.string({ maxLength: 500 }).map((s) => new TextEncoder().encode(s.repeat(20))),
      ),
      (bytes) => {
        assert.deepEqual(snappyUncompress(snappyCompress(bytes), 1 << 24), bytes);
      },
    ),
    { numRuns: 200 },
  );
  const repetitive = new TextEncoder().encode(
    'http_requests_total{job="api",instance="10.0.0.1:9100"}'.repeat(200),
  );
  assert.ok(snappyCompress(repetitive).length < repetitive.length / 10, "copies compress repetition");
});

/** One element of a snappy block, as any encoder may write it (Go's uses all of these). */
type SnappyOp =
  | { literal: Uint8Array; lengthBytes: 0 | 1 | 2 }
  | { copyKind: 1 | 2 | 3; offsetPick: number; length: number };

/** The block `ops` make, and the bytes it must decode to (built the naive way, byte by byte). */
function snappyBlock(ops: readonly SnappyOp[]): { block: Uint8Array; expected: Uint8Array } {
  const out: number[] = [];
  const tags: number[] = [];
  for (const op of ops) {
    if ("literal" in op) {
      const n = op.literal.length - 1;
      if (op.lengthBytes === 0 && n < 60) tags.push(n << 2);
      else if (op.lengthBytes <= 1 && n < 256) tags.push(60 << 2, n);
      else tags.push(61 << 2, n & 0xff, n >>> 8);
      tags.push(...op.literal);
      out.push(...op.literal);
      continue;
    }
    if (out.length === 0) continue;
    const maxOffset = op.copyKind === 1 ? Math.min(out.length, 2047) : out.length;
    const offset = 1 + (op.offsetPick % maxOffset);
    const length = op.copyKind === 1 ? 4 + (op.length % 8) : 1 + (op.length % 64);
    if (op.copyKind === 1) tags.push(1 | ((length - 4) << 2) | ((offset >>> 8) << 5), offset & 0xff);
    else if (op.copyKind === 2) tags.push(2 | ((length - 1) << 2), offset & 0xff, offset >>> 8);
    else tags.push(3 | ((length - 1) << 2), offset & 0xff, (offset >>> 8) & 0xff, offset >>> 16, 0);
    // Byte by byte, as the format defines a copy: an offset under the length repeats a pattern.
    for (let k = 0; k < length; k++) out.push(out[out.length - offset]!);
  }
  const header: number[] = [];
  let n = out.length;
  while (n >= 0x80) {
    header.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  header.push(n);
  return { block: Uint8Array.from([...header, ...tags]), expected: Uint8Array.from(out) };
}

test("MT-05 snappy decodes every element another encoder may write: long literals, 1-, 2- and 4-byte offsets, overlapping copies", () => {
  const op: fc.Arbitrary<SnappyOp> = fc.oneof(
    fc.record({
      literal: fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 40 }),
        fc.uint8Array({ minLength: 1, maxLength: 700 }),
      ),
      lengthBytes: fc.constantFrom(0 as const, 1 as const, 2 as const),
    }),
    fc.record({
      copyKind: fc.constantFrom(1 as const, 2 as const, 3 as const),
      offsetPick: fc.nat(),
      length: fc.nat(),
    }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const { block, expected } = snappyBlock(ops);
      assert.deepEqual(snappyUncompress(block, 1 << 24), expected);
    }),
    { numRuns: 400 },
  );
});

test("MT-05 snappy refuses a declared size over the bound and bytes that are not a block", () => {
  const packed = snappyCompress(new Uint8Array(10_000));
  assert.throws(() => snappyUncompress(packed, 1_000), RangeError);
  for (const bad of [
    Uint8Array.of(10, 0xff),
    Uint8Array.of(5, 0x01, 0x09),
    Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80),
  ]) {
    assert.throws(() => snappyUncompress(bad, 1 << 20), RangeError);
  }
});

const labelPairs = fc.uniqueArray(
  fc.tuple(fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/), fc.string({ minLength: 1, maxLength: 12 })),
  { selector: ([name]) => name, maxLength: 5 },
);

test("MT-05 a WriteRequest round-trips through the protobuf encoder and the hand-written decoder", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          labels: labelPairs,
          samples: fc.array(fc.record({ t: fc.integer({ min: -(2 ** 50), max: 2 ** 52 }), v: fc.double() }), {
            maxLength: 5,
          }),
        }),
        { maxLength: 8 },
      ),
      (series) => {
        const decoded = decodeWriteRequest(encodeWriteRequest(series), limits);
        assert.equal(decoded.series.length, series.length);
        decoded.series.forEach((s, i) => {
          assert.deepEqual(s.labels, series[i]!.labels);
          assert.deepEqual(
            s.samples.map((x) => x.t),
            series[i]!.samples.map((x) => x.t),
          );
          s.samples.forEach((x, j) => {
            const sent = series[i]!.samples[j]!.v;
            assert.ok(Object.is(x.v, sent) || (Number.isNaN(x.v) && Number.isNaN(sent)));
          });
        });
      },
    ),
    { numRuns: 200 },
  );
  const stale = decodeWriteRequest(
    encodeWriteRequest([{ labels: [["__name__", "up"]], samples: [{ t: 1, v: STALE_NAN }] }]),
    limits,
  );
  assert.equal(isStaleNaN(stale.series[0]!.samples[0]!.v), true, "StaleNaN crosses the wire intact");
});

test("MT-05 every shape of a Sample decodes to the same time and value: the common one (value, then a short time) and any other — a field left out, the other order, a field repeated or unknown, a negative or far time", () => {
  /** Protobuf by hand: a varint, a length-delimited field, a fixed64 double. */
  const varint = (n: bigint): number[] => {
    const out: number[] = [];
    let v = BigInt.asUintN(64, n);
    while (v > 0x7fn) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    return out;
  };
  const field = (key: number, payload: number[]) => [key, ...varint(BigInt(payload.length)), ...payload];
  const double = (v: number) => [...new Uint8Array(new Float64Array([v]).buffer)];
  const value = (v: number) => [0x09, ...double(v)];
  const time = (t: bigint) => [0x10, ...varint(t)];
  const request = (samples: number[][]) =>
    Uint8Array.from(
      field(0x0a, [
        ...field(0x0a, [
          ...field(0x0a, [...new TextEncoder().encode("__name__")]),
          ...field(0x12, [0x75, 0x70]),
        ]),
        ...samples.flatMap((sample) => field(0x12, sample)),
      ]),
    );
  const shapes: Array<[string, number[], number, number]> = [
    ["common", [...value(1.5), ...time(1_700_000_000_000n)], 1_700_000_000_000, 1.5],
    ["common, a one-byte time", [...value(-2), ...time(5n)], 5, -2],
    [
      "common, a 7-byte time (the longest read directly)",
      [...value(3), ...time(2n ** 49n - 1n)],
      2 ** 49 - 1,
      3,
    ],
    ["an 8-byte time", [...value(3), ...time(2n ** 49n)], 2 ** 49, 3],
    ["a negative time (a 10-byte varint)", [...value(4), ...time(-1_000n)], -1_000, 4],
    ["the time first", [...time(1_700_000_000_001n), ...value(5)], 1_700_000_000_001, 5],
    ["no value (zero, left out)", [...time(1_700_000_000_002n)], 1_700_000_000_002, 0],
    ["no time (zero, left out)", [...value(6)], 0, 6],
    ["the value twice: the last wins", [...value(7), ...value(8), ...time(9n)], 9, 8],
    ["an unknown field after the time", [...value(10), ...time(11n), 0x18, 0x01], 11, 10],
    // StaleNaN's bytes as Prometheus writes them (a Float64Array would quiet the signalling NaN).
    ["StaleNaN, bit for bit", [0x09, 0x02, 0, 0, 0, 0, 0, 0xf0, 0x7f, ...time(12n)], 12, STALE_NAN],
  ];
  const decoded = decodeWriteRequest(request(shapes.map(([, bytes]) => bytes)), limits).series[0]!;
  assert.equal(decoded.samples.length, shapes.length);
  shapes.forEach(([name, , t, v], i) => {
    const got = decoded.samples[i]!;
    assert.equal(got.t, t, `${name}: time`);
    if (name.startsWith("StaleNaN")) assert.equal(isStaleNaN(got.v), true, name);
    else assert.ok(Object.is(got.v, v), `${name}: value ${got.v}`);
  });
});

test("MT-05 label text in any UTF-8 — short or long, ASCII or not — decodes as sent; bytes that are not UTF-8 are a RangeError", () => {
  const texts = [
    "café",
    "日本語のラベル",
    "a".repeat(64),
    "b".repeat(65),
    `${"é".repeat(40)}x`,
    "ascii then ü",
    "😀",
  ];
  const sent = texts.map((text, i) => ({
    labels: [
      ["__name__", `m${i}`],
      ["v", text],
    ] as Array<[string, string]>,
    samples: [{ t: 1, v: 1 }],
  }));
  const decoded = decodeWriteRequest(encodeWriteRequest(sent), limits);
  assert.deepEqual(
    decoded.series.map((s) => s.labels[1]![1]),
    texts,
  );
  for (const value of ["zzzz", "z".repeat(80)]) {
    const bytes = encodeWriteRequest([
      {
        labels: [
          ["__name__", "up"],
          ["v", value],
        ],
        samples: [{ t: 1, v: 1 }],
      },
    ]);
    const at = Buffer.from(bytes).indexOf(value);
    bytes[at + 1] = 0xff; // never valid in UTF-8
    assert.throws(
      () => decodeWriteRequest(bytes, limits),
      /invalid UTF-8/,
      `a value of ${value.length} bytes`,
    );
  }
});

test("MT-05 malformed protobuf is a RangeError naming where, whatever the bytes", () => {
  const good = encodeWriteRequest([
    { labels: [["__name__", "up"]], samples: [{ t: 1_700_000_000_000, v: 1 }] },
  ]);
  for (let cut = 1; cut < good.length; cut++) {
    assert.throws(() => decodeWriteRequest(good.subarray(0, cut), limits), RangeError, `cut at ${cut}`);
  }
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      try {
        decodeWriteRequest(bytes, limits);
      } catch (error) {
        assert.ok(error instanceof RangeError, String(error));
      }
    }),
    { numRuns: 500 },
  );
  assert.throws(() => decodeWriteRequest(good, { maxSeries: 0, maxSamples: 10 }), /more than 0 series/);
});

test("MT-05 validation adds the standard labels, drops empty values and names the field at fault", () => {
  const t = 1_700_000_000_000;
  const ok = validateBatch(
    [
      {
        labels: [
          ["__name__", "up"],
          ["job", "api"],
          ["empty", ""],
        ],
        samples: [{ t, v: 1 }],
      },
    ],
    {
      standardLabels: [
        ["region", "eu"],
        ["job", "ignored"],
      ],
    },
  );
  assert.ok(ok.ok);
  assert.deepEqual(ok.batch[0]!.labels, [
    ["__name__", "up"],
    ["job", "api"],
    ["region", "eu"],
  ]);
  const cases: Array<[Parameters<typeof validateBatch>[0], string]> = [
    [[{ labels: [["job", "api"]], samples: [{ t, v: 1 }] }], "timeseries[0].labels"],
    [
      [
        { labels: [["__name__", "up"]], samples: [{ t, v: 1 }] },
        { labels: [["__name__", "1up"]], samples: [{ t, v: 1 }] },
      ],
      "timeseries[1].labels",
    ],
    [
      [
        {
          labels: [
            ["__name__", "up"],
            ["__reserved", "x"],
          ],
          samples: [{ t, v: 1 }],
        },
      ],
      "timeseries[0].labels",
    ],
    [
      [
        {
          labels: [
            ["__name__", "up"],
            ["a", "1"],
            ["a", "2"],
          ],
          samples: [{ t, v: 1 }],
        },
      ],
      "timeseries[0].labels",
    ],
    [[{ labels: [["__name__", "up"]], samples: [{ t: 1.5, v: 1 }] }], "timeseries[0].samples[0].timestamp"],
    [
      [{ labels: [["__name__", "up"]], samples: [{ t: t / 1000, v: 1 }] }],
      "timeseries[0].samples[0].timestamp",
    ],
  ];
  for (const [series, field] of cases) {
    const checked = validateBatch(series, { standardLabels: [] });
    assert.equal(checked.ok, false);
    assert.equal(!checked.ok && checked.field, field);
  }
});

test("MT-06 a series always hashes to the same partition, whatever the label order; series spread evenly", () => {
  fc.assert(
    fc.property(labelPairs, fc.integer({ min: 1, max: 64 }), (pairs, n) => {
      const a = partitionOf(labelsFromPairs([["__name__", "m"], ...pairs]), n);
      const b = partitionOf(labelsFromPairs([...pairs].reverse().concat([["__name__", "m"]])), n);
      assert.equal(a, b);
      assert.ok(a >= 0 && a < n);
    }),
  );
  const batch = Array.from({ length: 16_000 }, (_, i) => ({
    labels: labelsFromPairs([
      ["__name__", "node_cpu"],
      ["instance", `h${i}`],
    ]),
  }));
  const counts = [...splitByPartition(batch, 16).values()].map((list) => list.length);
  assert.equal(counts.length, 16);
  assert.ok(Math.min(...counts) > 800 && Math.max(...counts) < 1_200, `per partition: ${counts.join(",")}`);
  // Inside a partition the batch order holds, so one series' samples keep their order.
  const twice = [...batch.slice(0, 10), ...batch.slice(0, 10)];
  for (const list of splitByPartition(twice, 4).values()) {
    const keys = list.map((e) => e.labels[1]![1]);
    assert.deepEqual(keys.slice(0, keys.length / 2), keys.slice(keys.length / 2));
  }
});
