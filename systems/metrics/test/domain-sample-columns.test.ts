/**
 * The columnar ingest path: series interned by the bytes that name them, a remote-write
 * request read into columns, validated in columns, the stream's messages decoded into columns
 * (current and legacy forms) and the head planning appends from columns. What a user relies
 * on: every sample arrives once, in order, with its exact bits, under its canonical labels —
 * and a series is decoded and checked once, not once per request.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { HeadBlock, type SeriesSamples } from "../src/domain/head-block.ts";
import { validateBatch, validateWriteColumns } from "../src/domain/ingest-batch.ts";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import type { Labels } from "../src/domain/labels.ts";
import {
  decodeWriteRequest,
  decodeWriteRequestColumns,
  encodeWriteRequest,
  labelsInSpan,
  type WriteRequestColumns,
} from "../src/domain/remote-write.ts";
import {
  columnsOf,
  concatColumns,
  type SampleColumns,
  sampleCountOf,
  seriesSamplesOf,
} from "../src/domain/sample-columns.ts";
import { SeriesInterner, seriesHash } from "../src/domain/series-interner.ts";
import { isStaleNaN, STALE_NAN } from "../src/domain/staleness.ts";
import {
  decodeStreamBatch,
  decodeStreamColumns,
  encodeStreamBatch,
  STREAM_BATCH_VERSION,
} from "../src/domain/stream-batch.ts";

const T = 1_700_000_000_000;
const limits = { maxSeries: 100_000, maxSamples: 1_000_000 };
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** The 8 bytes of a float64, in the byte order asked (a NaN's payload included). */
function f64Bytes(v: number, littleEndian: boolean): number[] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v, littleEndian);
  return [...new Uint8Array(view.buffer)];
}

/** A column value's exact bits (read off the Float64Array's bytes, not through a number). */
function bitsAt(values: Float64Array, i: number): bigint {
  return new DataView(values.buffer, values.byteOffset, values.byteLength).getBigUint64(i * 8, true);
}

function bitsOf(v: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v, true);
  return view.getBigUint64(0, true);
}

function columnSamples(batch: SampleColumns<{ readonly labels: Labels }>, i: number): number[][] {
  const out: number[][] = [];
  for (let j = batch.offsets[i]!; j < batch.offsets[i + 1]!; j++)
    out.push([batch.timestamps[j]!, batch.values[j]!]);
  return out;
}

// Protobuf written by hand, for the shapes `encodeWriteRequest` never produces.

function pbVarint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

function pbField(field: number, payload: readonly number[]): number[] {
  return [field * 8 + 2, ...pbVarint(payload.length), ...payload];
}

function pbLabel(name: string, value: string): number[] {
  return pbField(1, [...pbField(1, [...utf8(name)]), ...pbField(2, [...utf8(value)])]);
}

/** A Sample field; `v` undefined leaves the value out, as proto3 encoders (Prometheus's) do for 0. */
function pbSample(t: number, v: number | undefined): number[] {
  const value = v === undefined ? [] : [0x09, ...f64Bytes(v, true)];
  return pbField(2, [...value, 0x10, ...pbVarint(t)]);
}

function pbTimeSeries(...fields: number[][]): number[] {
  return pbField(1, fields.flat());
}

// ---------------------------------------------------------------------------------------------
// SeriesInterner

test("the interner finds an entry again by the same bytes at another offset or in another buffer, and makes it once", () => {
  const interner = new SeriesInterner<{ name: string }>({ maxEntries: 100 });
  let made = 0;
  const make = (bytes: Uint8Array, start: number, end: number) => {
    made++;
    return { name: new TextDecoder().decode(bytes.subarray(start, end)) };
  };
  const first = utf8('xxup{job="api"}yy');
  const a = interner.intern(first, 2, 15, make);
  assert.deepEqual(a, { name: 'up{job="api"}' });
  const elsewhere = utf8('up{job="api"}');
  assert.equal(interner.intern(elsewhere, 0, elsewhere.length, make), a, "another buffer, same bytes");
  const shifted = utf8('------up{job="api"}');
  assert.equal(interner.intern(shifted, 6, shifted.length, make), a, "another offset, same bytes");
  // The table keeps its own copy: the buffer it was first met in may be reused.
  first.fill(0);
  assert.equal(interner.intern(elsewhere, 0, elsewhere.length, make), a);
  assert.equal(made, 1);
  assert.equal(interner.size, 1);
});

test("the interner gives different bytes different entries, even when their hashes collide", () => {
  const interner = new SeriesInterner<string>({ maxEntries: 100 });
  const make = (bytes: Uint8Array, start: number, end: number) =>
    new TextDecoder().decode(bytes.subarray(start, end));
  // Two label texts with one hash, found by search (30 bits: a few tens of thousands of tries).
  const seen = new Map<number, string>();
  let [first, second] = ["", ""];
  for (let i = 0; second === ""; i++) {
    const text = `up{i="${i}"}`;
    const bytes = utf8(text);
    const hash = seriesHash(bytes, 0, bytes.length);
    const earlier = seen.get(hash);
    if (earlier === undefined) seen.set(hash, text);
    else [first, second] = [earlier, text];
  }
  const [one, two] = [utf8(first), utf8(second)];
  assert.equal(seriesHash(one, 0, one.length), seriesHash(two, 0, two.length), "the premise: one hash");
  assert.equal(interner.intern(one, 0, one.length, make), first);
  assert.equal(interner.intern(two, 0, two.length, make), second);
  assert.equal(interner.intern(one, 0, one.length, make), first);
  assert.equal(interner.intern(two, 0, two.length, make), second);
  // A prefix is other bytes, not the same entry.
  assert.equal(interner.intern(one, 0, one.length - 1, make), first.slice(0, -1));
  assert.equal(interner.size, 3);
});

test("the interner keeps its own copy of a series' bytes, not a view of the message they came in", () => {
  const interner = new SeriesInterner<string>({ maxEntries: 100 });
  const message = Buffer.from('xx up{i="1"} yy');
  const make = () => "up 1";
  assert.equal(interner.intern(message, 3, 12, make), "up 1");
  message.fill(0); // the message's memory reused for something else
  let asked = 0;
  const again = utf8('up{i="1"}');
  assert.equal(
    interner.intern(again, 0, again.length, () => {
      asked++;
      return "made again";
    }),
    "up 1",
  );
  assert.equal(asked, 0, "found by the bytes it was first seen with");
});

test("the interner does not remember a refusal: the next sighting asks again", () => {
  const interner = new SeriesInterner<string>({ maxEntries: 100 });
  const bytes = utf8("bad");
  let asked = 0;
  const refuse = () => {
    asked++;
    return undefined;
  };
  assert.equal(interner.intern(bytes, 0, 3, refuse), undefined);
  assert.equal(interner.intern(bytes, 0, 3, refuse), undefined);
  assert.equal(asked, 2);
  assert.equal(interner.size, 0);
  // Once accepted, it is found without asking.
  assert.equal(
    interner.intern(bytes, 0, 3, () => "ok"),
    "ok",
  );
  assert.equal(interner.intern(bytes, 0, 3, refuse), "ok");
  assert.equal(asked, 2);
});

test("past maxEntries the interner forgets its table and refills it as series come", () => {
  const interner = new SeriesInterner<{ text: string }>({ maxEntries: 2 });
  const made: string[] = [];
  const make = (bytes: Uint8Array, start: number, end: number) => {
    const text = new TextDecoder().decode(bytes.subarray(start, end));
    made.push(text);
    return { text };
  };
  const [a, b, c] = ["a", "b", "c"].map(utf8) as [Uint8Array, Uint8Array, Uint8Array];
  const firstA = interner.intern(a, 0, 1, make);
  interner.intern(b, 0, 1, make);
  assert.equal(interner.size, 2);
  assert.equal(interner.resets, 0);
  interner.intern(c, 0, 1, make);
  assert.equal(interner.resets, 1, "the third entry found the table full");
  assert.equal(interner.size, 1, "only the newest entry is held");
  const againA = interner.intern(a, 0, 1, make);
  assert.notEqual(againA, firstA, "a forgotten series is made again");
  assert.deepEqual(againA, firstA);
  assert.equal(interner.intern(c, 0, 1, make)?.text, "c");
  assert.deepEqual(made, ["a", "b", "c", "a"]);
  assert.equal(interner.size, 2);
});

// ---------------------------------------------------------------------------------------------
// Remote write in columns

test("a WriteRequest read in columns has the sent samples in order, value bits kept, and label spans that decode to the sent labels", () => {
  const sent: Array<{ labels: Array<[string, string]>; samples: Array<{ t: number; v: number }> }> = [
    {
      labels: [
        ["job", "api"],
        ["__name__", "http_requests_total"],
      ],
      samples: [
        { t: T, v: 1.5 },
        { t: T + 15_000, v: STALE_NAN },
        { t: T + 30_000, v: Number.NaN },
        { t: T + 45_000, v: -0 },
      ],
    },
    { labels: [["__name__", "empty"]], samples: [] },
    { labels: [["__name__", "up"]], samples: [{ t: T - 1, v: Number.NEGATIVE_INFINITY }] },
  ];
  const bytes = encodeWriteRequest(sent);
  const columns = decodeWriteRequestColumns(bytes, limits);
  assert.deepEqual([...columns.offsets], [0, 4, 4, 5]);
  assert.deepEqual([...columns.timestamps], [T, T + 15_000, T + 30_000, T + 45_000, T - 1]);
  assert.deepEqual([...columns.scattered], [0, 0, 0]);
  assert.equal(columns.values[0], 1.5);
  assert.equal(bitsAt(columns.values, 1), 0x7ff0000000000002n, "StaleNaN keeps its bits");
  assert.ok(isStaleNaN(columns.values[1]!));
  assert.ok(
    Number.isNaN(columns.values[2]!) && !isStaleNaN(columns.values[2]!),
    "an ordinary NaN stays ordinary",
  );
  assert.equal(bitsAt(columns.values, 2), bitsOf(Number.NaN));
  assert.ok(Object.is(columns.values[3], -0));
  assert.equal(columns.values[4], Number.NEGATIVE_INFINITY);
  for (let i = 0; i < sent.length; i++) {
    const start = columns.labelSpans[2 * i]!;
    const end = columns.labelSpans[2 * i + 1]!;
    assert.deepEqual(labelsInSpan(bytes, start, end), sent[i]!.labels, `series ${i}, as sent (not sorted)`);
    // The span is the label fields only: the same labels with other samples give the same bytes.
    const alone = encodeWriteRequest([{ labels: sent[i]!.labels, samples: [{ t: T + 999, v: 7 }] }]);
    const aloneColumns = decodeWriteRequestColumns(alone, limits);
    assert.deepEqual(
      alone.subarray(aloneColumns.labelSpans[0]!, aloneColumns.labelSpans[1]!),
      bytes.subarray(start, end),
      `series ${i}'s label bytes do not depend on its samples`,
    );
  }
  // The object form reads the same.
  assert.deepEqual(
    decodeWriteRequest(bytes, limits).series.map((s) => s.labels),
    sent.map((s) => s.labels),
  );
});

test("a TimeSeries whose labels come after a sample is flagged scattered, and its span still yields every label", () => {
  const bytes = Uint8Array.from([
    ...pbTimeSeries(pbLabel("__name__", "up"), pbSample(T, 1)),
    ...pbTimeSeries(pbLabel("__name__", "up"), pbSample(T, 2), pbLabel("job", "api"), pbSample(T + 1, 3)),
    ...pbTimeSeries(pbSample(T + 5, 4), pbLabel("job", "web"), pbLabel("__name__", "down")),
  ]);
  const columns = decodeWriteRequestColumns(bytes, limits);
  assert.deepEqual([...columns.scattered], [0, 1, 1]);
  assert.deepEqual([...columns.offsets], [0, 1, 3, 4]);
  assert.deepEqual([...columns.timestamps], [T, T, T + 1, T + 5]);
  assert.deepEqual([...columns.values], [1, 2, 3, 4]);
  const labelsOf = (i: number) =>
    labelsInSpan(bytes, columns.labelSpans[2 * i]!, columns.labelSpans[2 * i + 1]!);
  assert.deepEqual(labelsOf(0), [["__name__", "up"]]);
  assert.deepEqual(labelsOf(1), [
    ["__name__", "up"],
    ["job", "api"],
  ]);
  assert.deepEqual(labelsOf(2), [
    ["job", "web"],
    ["__name__", "down"],
  ]);
  assert.equal(
    columns.labelSpans[1]! - columns.labelSpans[0]!,
    pbLabel("__name__", "up").length,
    "an ordered series' span stops where its samples start",
  );
});

test("a WriteRequest past maxSeries or maxSamples, or cut anywhere, is a RangeError", () => {
  const bytes = encodeWriteRequest([
    { labels: [["__name__", "a"]], samples: [{ t: T, v: 1 }] },
    {
      labels: [["__name__", "b"]],
      samples: [
        { t: T, v: 1 },
        { t: T + 1, v: 2 },
      ],
    },
  ]);
  assert.equal(decodeWriteRequestColumns(bytes, { maxSeries: 2, maxSamples: 3 }).timestamps.length, 3);
  assert.throws(() => decodeWriteRequestColumns(bytes, { maxSeries: 1, maxSamples: 3 }), {
    name: "RangeError",
    message: /more than 1 series/,
  });
  assert.throws(() => decodeWriteRequestColumns(bytes, { maxSeries: 2, maxSamples: 2 }), {
    name: "RangeError",
    message: /more than 2 samples/,
  });
  // Cut between the two series, the bytes are a whole request of the first; anywhere else, a RangeError.
  const firstSeries = encodeWriteRequest([{ labels: [["__name__", "a"]], samples: [{ t: T, v: 1 }] }]).length;
  assert.deepEqual([...decodeWriteRequestColumns(bytes.subarray(0, firstSeries), limits).offsets], [0, 1]);
  for (let cut = 1; cut < bytes.length; cut++) {
    if (cut === firstSeries) continue;
    assert.throws(
      () => decodeWriteRequestColumns(bytes.subarray(0, cut), limits),
      RangeError,
      `cut at ${cut}`,
    );
  }
});

test("samples sent without their value field (a 0, which proto3 encoders such as Prometheus's leave out) are all read, as 0", () => {
  // Ten samples of value 0 take 9 bytes each on the wire: fewer than the decoder's per-sample estimate.
  const samples = Array.from({ length: 10 }, (_, k) => pbSample(T + k * 1_000, undefined));
  const bytes = Uint8Array.from(pbTimeSeries(pbLabel("__name__", "up"), ...samples));
  const columns = decodeWriteRequestColumns(bytes, limits);
  assert.deepEqual([...columns.offsets], [0, 10]);
  assert.equal(columns.timestamps.length, 10, "every sample has its timestamp");
  assert.equal(columns.values.length, 10, "every sample has its value");
  assert.deepEqual(
    [...columns.timestamps],
    Array.from({ length: 10 }, (_, k) => T + k * 1_000),
  );
  assert.deepEqual([...columns.values], new Array(10).fill(0));
  const checked = validateWriteColumns(
    columns,
    new SeriesInterner<{ labels: Labels }>({ maxEntries: 10 }),
    (labels) => ({ labels }),
    {
      standardLabels: [],
    },
  );
  assert.ok(checked.ok, checked.ok ? "" : `${checked.field}: ${checked.reason}`);
});

// ---------------------------------------------------------------------------------------------
// Validation in columns

interface Entry {
  readonly labels: Labels;
  readonly serial: number;
}

function validator(standardLabels: Labels = []) {
  const interner = new SeriesInterner<Entry>({ maxEntries: 1_000 });
  const made: Labels[] = [];
  const entryOf = (labels: Labels): Entry => {
    made.push(labels);
    return { labels, serial: made.length };
  };
  const check = (request: WriteRequestColumns) =>
    validateWriteColumns(request, interner, entryOf, { standardLabels });
  return { interner, made, check };
}

test("validated columns carry canonical labels, and each distinct label set is made into an entry once across requests", () => {
  const { interner, made, check } = validator([
    ["region", "eu"],
    ["job", "ignored"],
  ]);
  const request = (t: number) =>
    decodeWriteRequestColumns(
      encodeWriteRequest([
        {
          labels: [
            ["job", "api"],
            ["__name__", "up"],
            ["empty", ""],
          ],
          samples: [
            { t, v: 1 },
            { t: t + 1, v: 2 },
          ],
        },
        {
          labels: [
            ["region", "us"],
            ["__name__", "up"],
          ],
          samples: [{ t, v: 3 }],
        },
      ]),
      limits,
    );
  const first = check(request(T));
  assert.ok(first.ok);
  assert.deepEqual(
    first.batch.series.map((s) => s.labels),
    [
      [
        ["__name__", "up"],
        ["job", "api"],
        ["region", "eu"],
      ],
      [
        ["__name__", "up"],
        ["job", "ignored"],
        ["region", "us"],
      ],
    ],
    "sorted, empty values dropped, standard labels added only where the series has none of its own",
  );
  assert.equal(first.samples, 3);
  const second = check(request(T + 60_000));
  assert.ok(second.ok);
  assert.equal(made.length, 2, "entryOf ran once per distinct label set");
  assert.equal(interner.size, 2);
  assert.equal(second.batch.series[0], first.batch.series[0], "the same entry object, found by its bytes");
  assert.equal(second.batch.series[1], first.batch.series[1]);
  assert.deepEqual(columnSamples(second.batch, 0), [
    [T + 60_000, 1],
    [T + 60_001, 2],
  ]);
  assert.deepEqual(columnSamples(second.batch, 1), [[T + 60_000, 3]]);
});

test("a label sent with an empty value counts as absent: the standard label of that name is added", () => {
  const objects = validateBatch(
    [
      {
        labels: [
          ["__name__", "up"],
          ["region", ""],
        ],
        samples: [{ t: T, v: 1 }],
      },
    ],
    { standardLabels: [["region", "eu"]] },
  );
  assert.ok(objects.ok);
  assert.deepEqual(objects.batch[0]!.labels, [
    ["__name__", "up"],
    ["region", "eu"],
  ]);
  const { check } = validator([["region", "eu"]]);
  const checked = check(
    decodeWriteRequestColumns(
      encodeWriteRequest([
        {
          labels: [
            ["__name__", "up"],
            ["region", ""],
          ],
          samples: [{ t: T, v: 1 }],
        },
      ]),
      limits,
    ),
  );
  assert.ok(checked.ok);
  assert.deepEqual(checked.batch.series[0]!.labels, [
    ["__name__", "up"],
    ["region", "eu"],
  ]);
});

test("a scattered series is validated and made canonical like any other", () => {
  const { check } = validator();
  const bytes = Uint8Array.from(
    pbTimeSeries(pbLabel("job", "api"), pbSample(T, 1), pbLabel("__name__", "up"), pbSample(T + 1, 2)),
  );
  const columns = decodeWriteRequestColumns(bytes, limits);
  assert.equal(columns.scattered[0], 1);
  const checked = check(columns);
  assert.ok(checked.ok);
  assert.deepEqual(checked.batch.series[0]!.labels, [
    ["__name__", "up"],
    ["job", "api"],
  ]);
  assert.deepEqual(columnSamples(checked.batch, 0), [
    [T, 1],
    [T + 1, 2],
  ]);
});

test("series without samples are left out of validated columns, and the others' samples still line up with them", () => {
  const { check } = validator();
  const sent = [
    { labels: [["__name__", "zero"]] as Array<[string, string]>, samples: [] },
    {
      labels: [["__name__", "a"]] as Array<[string, string]>,
      samples: [
        { t: T, v: 1 },
        { t: T + 1, v: STALE_NAN },
      ],
    },
    { labels: [["__name__", "none"]] as Array<[string, string]>, samples: [] },
    {
      labels: [["__name__", "b"]] as Array<[string, string]>,
      samples: [
        { t: T + 2, v: 3 },
        { t: T + 3, v: 4 },
        { t: T + 4, v: 5 },
      ],
    },
    { labels: [["__name__", "last"]] as Array<[string, string]>, samples: [] },
  ];
  const checked = check(decodeWriteRequestColumns(encodeWriteRequest(sent), limits));
  assert.ok(checked.ok);
  assert.deepEqual(
    checked.batch.series.map((s) => s.labels),
    [[["__name__", "a"]], [["__name__", "b"]]],
  );
  assert.deepEqual([...checked.batch.offsets], [0, 2, 5]);
  assert.deepEqual([...checked.batch.timestamps], [T, T + 1, T + 2, T + 3, T + 4]);
  assert.equal(checked.batch.values.length, 5);
  assert.equal(checked.samples, 5);
  assert.equal(sampleCountOf(checked.batch), 5);
  assert.equal(checked.batch.values[0], 1);
  assert.equal(bitsAt(checked.batch.values, 1), 0x7ff0000000000002n, "StaleNaN survives the repacking");
  assert.deepEqual([...checked.batch.values.subarray(2)], [3, 4, 5]);
});

test("validation of columns names the field at fault: the labels of series i, or sample j counted within its series", () => {
  const { check, made } = validator();
  const badName = check(
    decodeWriteRequestColumns(
      encodeWriteRequest([
        { labels: [["__name__", "up"]], samples: [{ t: T, v: 1 }] },
        {
          labels: [
            ["__name__", "up"],
            ["bad-name", "x"],
          ],
          samples: [{ t: T, v: 1 }],
        },
      ]),
      limits,
    ),
  );
  assert.equal(badName.ok, false);
  assert.equal(!badName.ok && badName.field, "timeseries[1].labels");
  assert.match(!badName.ok ? badName.reason : "", /bad-name/);
  const noName = check(
    decodeWriteRequestColumns(encodeWriteRequest([{ labels: [["job", "x"]], samples: [] }]), limits),
  );
  assert.equal(!noName.ok && noName.field, "timeseries[0].labels");
  const seconds = check(
    decodeWriteRequestColumns(
      encodeWriteRequest([
        {
          labels: [["__name__", "a"]],
          samples: [
            { t: T, v: 1 },
            { t: T + 1, v: 1 },
          ],
        },
        {
          labels: [["__name__", "b"]],
          samples: [
            { t: T, v: 1 },
            { t: T + 1, v: 1 },
            { t: T / 1000, v: 1 },
          ],
        },
      ]),
      limits,
    ),
  );
  assert.equal(seconds.ok, false);
  assert.equal(!seconds.ok && seconds.field, "timeseries[1].samples[2].timestamp");
  assert.deepEqual(
    made.map((labels) => labels[0]![1]),
    ["up", "a", "b"],
    "a refused label set is never made into an entry",
  );
});

test("a label value that is not UTF-8 refuses the request naming the series' labels, every time, without throwing", () => {
  const { check, interner } = validator();
  const bytes = encodeWriteRequest([
    { labels: [["__name__", "ok"]], samples: [{ t: T, v: 1 }] },
    {
      labels: [
        ["__name__", "up"],
        ["v", "zzzz"],
      ],
      samples: [{ t: T, v: 1 }],
    },
  ]);
  bytes[Buffer.from(bytes).indexOf("zzzz") + 1] = 0xff; // never valid in UTF-8
  const columns = decodeWriteRequestColumns(bytes, limits); // label text is left undecoded here
  for (const attempt of [1, 2]) {
    const checked = check(columns);
    assert.equal(checked.ok, false, `attempt ${attempt}`);
    assert.equal(!checked.ok && checked.field, "timeseries[1].labels");
    assert.match(!checked.ok ? checked.reason : "", /UTF-8/, `attempt ${attempt} names the problem again`);
  }
  assert.equal(interner.size, 1, "only the valid series is remembered");
});

// ---------------------------------------------------------------------------------------------
// The stream's messages in columns

const streamSeries = (t0: number): SeriesSamples[] => [
  {
    labels: [
      ["__name__", "node_cpu_seconds_total"],
      ["instance", "host-1"],
    ],
    samples: [
      { t: t0, v: 1.5 },
      { t: t0 + 15_000, v: STALE_NAN },
      { t: t0 + 29_999, v: Number.NaN },
    ],
  },
  { labels: [["__name__", "up"]], samples: [{ t: t0 - 7, v: -0 }] },
  {
    labels: [
      ["__name__", "temp"],
      ["room", "café"],
    ],
    samples: [
      { t: t0 + 1, v: 21.5 },
      { t: t0 + 2, v: 22 },
    ],
  },
];

test("decoding stream messages with one interner makes each series' entry once, and the columns hold the exact samples", () => {
  const interner = new SeriesInterner<{ labels: Labels; serial: number }>({ maxEntries: 100 });
  let made = 0;
  const entryOf = (labels: Labels) => ({ labels, serial: ++made });
  const one = encodeStreamBatch({ tenant: "acme", partition: 3, series: streamSeries(T) });
  const two = encodeStreamBatch({ tenant: "acme", partition: 3, series: streamSeries(T + 60_000) });
  assert.equal(one[0], STREAM_BATCH_VERSION);
  const first = decodeStreamColumns(one, { interner, entryOf });
  const second = decodeStreamColumns(two, { interner, entryOf });
  assert.equal(made, 3, "entryOf ran once per series over both messages");
  assert.equal(second.tenant, "acme");
  assert.equal(second.partition, 3);
  for (const [i, entry] of first.batch.series.entries()) assert.equal(second.batch.series[i], entry);
  assert.deepEqual(
    second.batch.series.map((s) => s.labels),
    streamSeries(0).map((s) => s.labels),
  );
  assert.deepEqual([...second.batch.offsets], [0, 3, 4, 6]);
  const t0 = T + 60_000;
  assert.deepEqual([...second.batch.timestamps], [t0, t0 + 15_000, t0 + 29_999, t0 - 7, t0 + 1, t0 + 2]);
  const values = second.batch.values;
  assert.equal(values[0], 1.5);
  assert.equal(bitsAt(values, 1), 0x7ff0000000000002n, "StaleNaN keeps its bits");
  assert.equal(bitsAt(values, 2), bitsOf(Number.NaN), "an ordinary NaN stays ordinary");
  assert.ok(Object.is(values[3], -0));
  assert.deepEqual([...values.subarray(4)], [21.5, 22]);
});

test("a series refused by keep is stepped over and the kept series' columns line up", () => {
  const bytes = encodeStreamBatch({ tenant: "acme", partition: 0, series: streamSeries(T) });
  const interner = new SeriesInterner<{ labels: Labels }>({ maxEntries: 100 });
  const decode = (keep: (labels: Labels) => boolean) =>
    decodeStreamColumns(bytes, {
      interner,
      entryOf: (labels) => ({ labels }),
      keep: (entry) => keep(entry.labels),
    }).batch;
  const withoutUp = decode((labels) => labels[0]![1] !== "up");
  assert.deepEqual(
    withoutUp.series.map((s) => s.labels[0]![1]),
    ["node_cpu_seconds_total", "temp"],
  );
  assert.deepEqual([...withoutUp.offsets], [0, 3, 5]);
  assert.deepEqual(columnSamples(withoutUp, 1), [
    [T + 1, 21.5],
    [T + 2, 22],
  ]);
  assert.equal(bitsAt(withoutUp.values, 1), 0x7ff0000000000002n);
  const onlyLast = decode((labels) => labels[0]![1] === "temp");
  assert.deepEqual([...onlyLast.offsets], [0, 2]);
  assert.deepEqual([...onlyLast.timestamps], [T + 1, T + 2]);
  assert.deepEqual([...onlyLast.values], [21.5, 22]);
  const none = decode(() => false);
  assert.equal(none.series.length, 0);
  assert.deepEqual([...none.offsets], [0]);
  assert.equal(sampleCountOf(none), 0);
});

/** A message in the first binary form (0xCB), written as `decodeBinaryV1` reads it. */
function legacyBinaryMessage(
  tenant: string,
  partition: number,
  series: readonly SeriesSamples[],
): Uint8Array {
  const out: number[] = [];
  const uvarint = (n: number) => out.push(...pbVarint(n));
  const zigzag = (n: number) => uvarint(n >= 0 ? n * 2 : -n * 2 - 1);
  const string = (text: string) => {
    const encoded = utf8(text);
    uvarint(encoded.length);
    out.push(...encoded);
  };
  const table: string[] = [];
  const indexOf = (text: string) => {
    if (!table.includes(text)) table.push(text);
    return table.indexOf(text);
  };
  for (const s of series)
    for (const [name, value] of s.labels) {
      indexOf(name);
      indexOf(value);
    }
  out.push(0xcb);
  string(tenant);
  uvarint(partition);
  uvarint(table.length);
  for (const text of table) string(text);
  uvarint(series.length);
  for (const s of series) {
    uvarint(s.labels.length);
    for (const [name, value] of s.labels) {
      uvarint(indexOf(name));
      uvarint(indexOf(value));
    }
    uvarint(s.samples.length);
    for (let i = 0; i < s.samples.length; i++)
      zigzag(i === 0 ? s.samples[0]!.t : s.samples[i]!.t - s.samples[i - 1]!.t);
    for (const sample of s.samples) out.push(...f64Bytes(sample.v, false));
  }
  return Uint8Array.from(out);
}

test("a message in the first binary form (0xCB) still decodes to the same labels and samples, in columns and as objects", () => {
  const series = streamSeries(T);
  const bytes = legacyBinaryMessage("acme", 9, series);
  let made = 0;
  const columns = decodeStreamColumns(bytes, {
    interner: new SeriesInterner<{ labels: Labels }>({ maxEntries: 100 }),
    entryOf: (labels) => {
      made++;
      return { labels };
    },
  });
  assert.equal(columns.tenant, "acme");
  assert.equal(columns.partition, 9);
  assert.equal(made, 3);
  assert.deepEqual(
    columns.batch.series.map((s) => s.labels),
    series.map((s) => s.labels),
  );
  assert.deepEqual([...columns.batch.offsets], [0, 3, 4, 6]);
  assert.deepEqual([...columns.batch.timestamps], [T, T + 15_000, T + 29_999, T - 7, T + 1, T + 2]);
  assert.equal(bitsAt(columns.batch.values, 1), 0x7ff0000000000002n, "StaleNaN keeps its bits");
  assert.equal(bitsAt(columns.batch.values, 2), bitsOf(Number.NaN));
  assert.ok(Object.is(columns.batch.values[3], -0));
  const objects = decodeStreamBatch(bytes);
  assert.equal(objects.tenant, "acme");
  assert.equal(objects.partition, 9);
  assert.deepEqual(
    objects.series.map((s) => s.labels),
    series.map((s) => s.labels),
  );
  assert.deepEqual(
    objects.series.map((s) => s.samples.map((x) => x.t)),
    series.map((s) => s.samples.map((x) => x.t)),
  );
  assert.ok(isStaleNaN(objects.series[0]!.samples[1]!.v));
  assert.ok(Number.isNaN(objects.series[0]!.samples[2]!.v) && !isStaleNaN(objects.series[0]!.samples[2]!.v));
  assert.deepEqual(
    objects.series[2]!.samples.map((x) => x.v),
    [21.5, 22],
  );
  // The same batch in the current form reads the same.
  assert.deepEqual(
    seriesSamplesOf(columns.batch).map((s) => s.samples.map((x) => x.t)),
    decodeStreamBatch(encodeStreamBatch({ tenant: "acme", partition: 9, series })).series.map((s) =>
      s.samples.map((x) => x.t),
    ),
  );
  const kept = decodeStreamBatch(bytes, { keep: (labels) => labels[0]![1] === "temp" });
  assert.deepEqual(kept.series, [series[2]]);
});

// ---------------------------------------------------------------------------------------------
// The head, planning from columns

const upLabels: Labels = [["__name__", "up"]];

function newHead(): HeadBlock {
  return new HeadBlock({ blockRangeMs: 7_200_000, limits: { maxSeries: 1_000, maxSeriesPerMetric: 1_000 } });
}

function stored(head: HeadBlock, name = "up"): number[][] {
  const found = head.select(
    [labelMatcher("=", "__name__", name)],
    Number.NEGATIVE_INFINITY,
    Number.POSITIVE_INFINITY,
  );
  if (found.length === 0) return [];
  assert.equal(found.length, 1);
  return found[0]!.timestamps.map((t, i) => [t, found[0]!.values[i]!]);
}

function columnsFor(series: ReadonlyArray<{ labels: Labels; samples: Array<[number, number]> }>) {
  return columnsOf(
    series.map((s) => ({ labels: s.labels, samples: s.samples.map(([t, v]) => ({ t, v })) })),
    (labels) => ({ labels }),
  );
}

test("the head skips an exact repeat in the middle of a series' samples and appends every other sample once", () => {
  const head = newHead();
  const plan = head.planColumns(
    columnsFor([
      {
        labels: upLabels,
        samples: [
          [T, 1],
          [T + 1_000, 2],
          [T + 1_000, 2],
          [T + 2_000, 3],
        ],
      },
    ]),
  );
  assert.ok(plan.ok);
  assert.deepEqual(plan.entries[0]!.spans, [0, 2, 3, 4], "the plan's spans leave out only the repeat");
  assert.equal(plan.sampleCount, 3);
  assert.deepEqual(plan.samplesByIndex, [3]);
  head.commit(plan);
  assert.deepEqual(stored(head), [
    [T, 1],
    [T + 1_000, 2],
    [T + 2_000, 3],
  ]);
  // A retried batch's repeat of the stored last sample is skipped too; a changed value is refused.
  const retry = head.planColumns(
    columnsFor([
      {
        labels: upLabels,
        samples: [
          [T + 2_000, 3],
          [T + 3_000, 4],
        ],
      },
    ]),
  );
  assert.ok(retry.ok);
  assert.deepEqual(retry.entries[0]!.spans, [1, 2]);
  const changed = head.planColumns(columnsFor([{ labels: upLabels, samples: [[T + 2_000, 9]] }]));
  assert.equal(!changed.ok && changed.code, "DUPLICATE_TIMESTAMP");
  head.commit(retry);
  assert.deepEqual(stored(head), [
    [T, 1],
    [T + 1_000, 2],
    [T + 2_000, 3],
    [T + 3_000, 4],
  ]);
});

test("with stored: skip, samples at or before a series' newest are left out; without it they are refused", () => {
  const head = newHead();
  const first = head.planColumns(
    columnsFor([
      {
        labels: upLabels,
        samples: [
          [T, 1],
          [T + 1_000, 2],
        ],
      },
    ]),
  );
  assert.ok(first.ok);
  head.commit(first);
  const redelivered = columnsFor([
    {
      labels: upLabels,
      samples: [
        [T, 1],
        [T + 1_000, 99],
        [T + 2_000, 3],
        [T + 3_000, 4],
      ],
    },
    { labels: [["__name__", "fresh"]], samples: [[T - 5_000, 7]] },
  ]);
  const refused = head.planColumns(redelivered);
  assert.equal(refused.ok, false);
  const plan = head.planColumns(redelivered, { stored: "skip" });
  assert.ok(plan.ok);
  assert.deepEqual(
    plan.entries.map((e) => e.spans),
    [
      [2, 4],
      [4, 5],
    ],
    "a new series keeps all its samples",
  );
  assert.deepEqual(plan.samplesByIndex, [2, 1]);
  head.commit(plan);
  assert.deepEqual(stored(head), [
    [T, 1],
    [T + 1_000, 2],
    [T + 2_000, 3],
    [T + 3_000, 4],
  ]);
  assert.deepEqual(stored(head, "fresh"), [[T - 5_000, 7]]);
});

test("with tooOld: skip, samples below the head's start are left out; without it the batch is refused as TOO_OLD", () => {
  const head = newHead();
  head.minValidT = T + 5_000;
  const batch = columnsFor([
    { labels: [["__name__", "other"]], samples: [[T + 6_000, 1]] },
    {
      labels: upLabels,
      samples: [
        [T, 1],
        [T + 6_000, 2],
        [T + 7_000, 3],
      ],
    },
  ]);
  const refused = head.planColumns(batch);
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.code, "TOO_OLD");
  assert.equal(!refused.ok && refused.index, 1);
  assert.equal(head.seriesCount, 0, "a refused plan changes nothing");
  const plan = head.planColumns(batch, { tooOld: "skip" });
  assert.ok(plan.ok);
  assert.equal(plan.sampleCount, 3);
  assert.deepEqual(plan.samplesByIndex, [1, 2]);
  head.commit(plan);
  assert.deepEqual(stored(head), [
    [T + 6_000, 2],
    [T + 7_000, 3],
  ]);
  assert.deepEqual(stored(head, "other"), [[T + 6_000, 1]]);
});

test("a series in two of the batches merged by concatColumns is appended once, its samples in order", () => {
  const a: Labels = [
    ["__name__", "up"],
    ["i", "a"],
  ];
  const b: Labels = [
    ["__name__", "up"],
    ["i", "b"],
  ];
  const one = columnsFor([
    {
      labels: a,
      samples: [
        [T, 1],
        [T + 1_000, 2],
      ],
    },
    { labels: b, samples: [[T, 10]] },
  ]);
  const empty = columnsFor([]);
  // Samples as objects: an array literal of numbers may hold a NaN canonicalised, losing StaleNaN.
  const two = columnsOf(
    [
      { labels: b, samples: [{ t: T + 1_000, v: 20 }] },
      {
        labels: a,
        samples: [
          { t: T + 1_000, v: 2 },
          { t: T + 2_000, v: STALE_NAN },
        ],
      },
    ],
    (labels) => ({ labels }),
  );
  assert.equal(bitsAt(two.values, 2), 0x7ff0000000000002n);
  const merged = concatColumns([one, empty, two]);
  assert.equal(merged.series.length, 4);
  assert.deepEqual([...merged.offsets], [0, 2, 3, 4, 6]);
  assert.equal(sampleCountOf(merged), 6);
  assert.deepEqual(
    seriesSamplesOf(merged).map((s) => s.samples.map((x) => x.t)),
    [[T, T + 1_000], [T], [T + 1_000], [T + 1_000, T + 2_000]],
  );
  const head = newHead();
  const plan = head.planColumns(merged);
  assert.ok(plan.ok);
  assert.equal(plan.entries.length, 2, "one entry per series");
  assert.equal(plan.newSeries.length, 2);
  assert.deepEqual(plan.samplesByIndex, [2, 1, 1, 1]);
  head.commit(plan);
  const found = head.select([labelMatcher("=", "__name__", "up")], 0, Number.POSITIVE_INFINITY);
  assert.deepEqual(
    found.map((s) => [s.labels, s.timestamps]),
    [
      [a, [T, T + 1_000, T + 2_000]],
      [b, [T, T + 1_000]],
    ],
  );
  assert.deepEqual([found[0]!.values[0], found[0]!.values[1]], [1, 2]);
  assert.ok(isStaleNaN(found[0]!.values[2]!), "the marker reaches the head intact");
  assert.deepEqual(Array.from(found[1]!.values), [10, 20]);
  // Out of order across the merged batches is still refused.
  const backwards = concatColumns([two, one]);
  const refused = newHead().planColumns(backwards);
  assert.equal(!refused.ok && refused.code, "OUT_OF_ORDER");
});
