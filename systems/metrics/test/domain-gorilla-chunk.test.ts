/**
 * The Gorilla chunk (MT-17): every sample comes back bit for bit (fast-check properties over
 * arbitrary timestamps and float64 bit patterns, StaleNaN included), and the bytes per sample
 * on the series shapes a scrape produces, measured and bounded against Gorilla's 1.37 B/sample.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { decodeChunk, GorillaChunkEncoder, MAX_SAMPLES_PER_CHUNK } from "../src/domain/gorilla-chunk.ts";
import { isStaleNaN, STALE_NAN } from "../src/domain/staleness.ts";

function bitsOf(value: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return view.getBigUint64(0);
}

function roundTrip(samples: Array<[number, number]>): void {
  const encoder = new GorillaChunkEncoder();
  for (const [t, v] of samples) encoder.append(t, v);
  const sealed = encoder.seal();
  const decoded = decodeChunk(sealed);
  assert.deepEqual(
    decoded.timestamps,
    samples.map(([t]) => t),
  );
  for (let i = 0; i < samples.length; i++) {
    assert.equal(bitsOf(decoded.values[i]!), bitsOf(samples[i]![1]), `sample ${i}`);
  }
  assert.equal(sealed.minT, samples[0]![0]);
  assert.equal(sealed.maxT, samples.at(-1)![0]);
}

/** Increasing timestamps from arbitrary positive gaps (1 ms … 2^40 ms), starting anywhere. */
const timestamps = (n: number) =>
  fc
    .tuple(
      fc.integer({ min: -(2 ** 45), max: 2 ** 45 }),
      fc.array(fc.oneof(fc.constant(15_000), fc.integer({ min: 1, max: 2 ** 40 })), {
        minLength: n - 1,
        maxLength: n - 1,
      }),
    )
    .map(([start, gaps]) => {
      const out = [start];
      for (const gap of gaps) out.push(out.at(-1)! + gap);
      return out;
    });

const anyFloat = fc.oneof(
  fc.double(),
  fc.constant(STALE_NAN),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((bits) => {
    const view = new DataView(new ArrayBuffer(8));
    view.setBigUint64(0, bits);
    return view.getFloat64(0);
  }),
);

test("MT-17 a Gorilla chunk round-trips any increasing timestamps and any float64 bit pattern", () => {
  fc.assert(
    fc.property(
      fc
        .integer({ min: 1, max: MAX_SAMPLES_PER_CHUNK })
        .chain((n) => fc.tuple(timestamps(n), fc.array(anyFloat, { minLength: n, maxLength: n }))),
      ([ts, vs]) => roundTrip(ts.map((t, i) => [t, vs[i]!])),
    ),
    { numRuns: 300 },
  );
});

test("MT-17 delta-of-deltas at each bucket's edges (14, 17, 20 bits, then 64) round-trip", () => {
  for (const bits of [14, 17, 20]) {
    const edge = 2 ** (bits - 1);
    for (const dod of [edge, edge + 1, -edge + 1, -edge, -edge - 1, 1, -1]) {
      // Gaps 10^7, 10^7, then 10^7 + dod: the third timestamp carries `dod`.
      const gap = 10_000_000;
      roundTrip([
        [0, 1],
        [gap, 2],
        [2 * gap, 3],
        [3 * gap + dod, 4],
        [4 * gap + dod, 5],
      ]);
    }
  }
});

test("MT-17 StaleNaN keeps its payload through a chunk, distinct from an ordinary NaN", () => {
  const encoder = new GorillaChunkEncoder();
  encoder.append(0, 1);
  encoder.append(15_000, STALE_NAN);
  encoder.append(30_000, Number.NaN);
  const { values } = decodeChunk(encoder.seal());
  assert.equal(isStaleNaN(values[1]!), true);
  assert.equal(isStaleNaN(values[2]!), false);
  assert.ok(Number.isNaN(values[2]!));
});

test("MT-17 a chunk refuses a 121st sample and a timestamp that does not increase", () => {
  const encoder = new GorillaChunkEncoder();
  for (let i = 0; i < MAX_SAMPLES_PER_CHUNK; i++) encoder.append(i * 1_000, i);
  assert.equal(encoder.full, true);
  assert.throws(() => encoder.append(1e9, 0));
  const other = new GorillaChunkEncoder();
  other.append(5, 0);
  assert.throws(() => other.append(5, 1));
});

/** Bytes per sample of `count` samples of one series shaped by `valueAt`, 15 s apart with a little jitter. */
function bytesPerSample(valueAt: (i: number) => number, jitterMs: (i: number) => number): number {
  let bytes = 0;
  let samples = 0;
  let encoder = new GorillaChunkEncoder();
  for (let i = 0; i < 1_200; i++) {
    if (encoder.full) {
      bytes += encoder.seal().bytes.length;
      encoder = new GorillaChunkEncoder();
    }
    encoder.append(1_700_000_000_000 + i * 15_000 + jitterMs(i), valueAt(i));
    samples++;
  }
  bytes += encoder.seal().bytes.length;
  return bytes / samples;
}

test("MT-17 bytes per sample measured on scrape-shaped series (Gorilla reports 1.37 B on its production mix)", (t) => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let counter = 0;
  const shapes = {
    constant: bytesPerSample(
      () => 1,
      () => 0,
    ),
    "counter +int": bytesPerSample(
      () => {
        counter += Math.floor(random() * 100);
        return counter;
      },
      () => 0,
    ),
    "gauge 2 decimals": bytesPerSample(
      (i) => Math.round((50 + 10 * Math.sin(i / 20)) * 100) / 100,
      () => 0,
    ),
    "counter, jittered scrape": bytesPerSample(
      (i) => i * 3,
      () => Math.floor(random() * 20) - 10,
    ),
    "LCG fraction": bytesPerSample(
      () => random(),
      () => 0,
    ),
  };
  t.diagnostic(
    `bytes/sample: ${Object.entries(shapes)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(", ")}`,
  );
  // A constant series costs 2 bits a sample (one for the timestamp, one for the value) plus the headers.
  assert.ok(shapes.constant < 0.5, `constant ${shapes.constant}`);
  assert.ok(shapes["counter +int"] < 3, `counter ${shapes["counter +int"]}`);
  assert.ok(shapes["gauge 2 decimals"] < 8.5, `gauge ${shapes["gauge 2 decimals"]}`);
  // 31-bit fractions leave the low mantissa bits zero: the XOR window keeps them out.
  assert.ok(shapes["LCG fraction"] < 9.5, `random ${shapes["LCG fraction"]}`);
});
