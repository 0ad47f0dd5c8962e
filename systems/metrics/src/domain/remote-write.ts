/**
 * Prometheus remote-write 1.0's WriteRequest, decoded by hand from protobuf (prompb/types.proto):
 *
 *     WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
 *     TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
 *                    repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
 *     Label        { string name = 1; string value = 2; }
 *     Sample       { double value = 1; int64 timestamp = 2; }
 *
 * Twenty lines of wire format instead of a protobuf runtime and generated code: only these
 * four messages are read, unknown fields are skipped as the protobuf rules say, and anything
 * malformed (a length past the end, a wire type a field cannot have, invalid UTF-8) is a
 * RangeError naming where. Native histograms are refused (not supported yet), exemplars and
 * metadata skipped. The ingest reads a request in columns (`decodeWriteRequestColumns`): times
 * and values straight into typed arrays, each series' label fields left as a span of bytes for
 * the ingest to find among the series it has met (their text decoded only for a new one).
 * `encodeWriteRequest` is the inverse, for the agent and the tests.
 *
 * @example
 * const request = decodeWriteRequestColumns(snappyUncompress(body, maxBytes), { maxSeries: 100_000, maxSamples: 1_000_000 });
 * labelsInSpan(request.bytes, request.labelSpans[0], request.labelSpans[1]); // [["__name__", "up"], ["job", "api"]]
 * request.timestamps[0]; // 1700000000000
 */

import { utf8Text } from "./byte-codec.ts";
import type { Labels } from "./labels.ts";

export interface DecodedSeries {
  readonly labels: Array<[string, string]>;
  readonly samples: Array<{ t: number; v: number }>;
}

export interface WriteRequest {
  readonly series: DecodedSeries[];
}

const TWO_32 = 2 ** 32;

class ProtoReader {
  readonly bytes: Uint8Array;
  pos: number;
  /** Where the current message ends: `within` narrows it to a nested message and restores it. */
  end: number;

  constructor(bytes: Uint8Array, pos = 0, end = bytes.length) {
    this.bytes = bytes;
    this.pos = pos;
    this.end = end;
  }

  /** A varint as a signed 64-bit integer in a Number (exact within ±2^53). */
  varint(): number {
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw new RangeError(`truncated varint at byte ${this.pos}`);
      const byte = this.bytes[this.pos++]!;
      if (shift < 28) lo |= (byte & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (byte & 0x0f) << 28;
        hi |= (byte & 0x7f) >>> 4;
      } else hi |= (byte & 0x7f) << (shift - 32);
      if (byte < 0x80) return (hi | 0) * TWO_32 + (lo >>> 0);
    }
    throw new RangeError(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  /**
   * Runs `read` over the next length-delimited field as a nested message on this same reader
   * (no reader or DataView per label and per sample: those allocations were most of the
   * decode's cost), then continues after it.
   */
  within<T>(read: (r: ProtoReader) => T): T {
    const [start, end] = this.span();
    const outer = this.end;
    this.pos = start;
    this.end = end;
    try {
      return read(this);
    } finally {
      this.pos = end;
      this.end = outer;
    }
  }

  /**
   * Reads a length-delimited field's length and returns where the field ends, `pos` left at
   * its start (no pair made: the decode's loops call this per label and per sample).
   */
  fieldEnd(): number {
    const length = this.varint();
    if (length < 0 || this.pos + length > this.end)
      throw new RangeError(`length ${length} past the end at byte ${this.pos}`);
    return this.pos + length;
  }

  /** The [start, end) of a length-delimited field. */
  span(): [number, number] {
    const end = this.fieldEnd();
    const start = this.pos;
    this.pos = end;
    return [start, end];
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) this.pos = this.fieldEnd();
    else if (wireType === 5) this.pos += 4;
    else throw new RangeError(`unsupported wire type ${wireType} at byte ${this.pos}`);
    if (this.pos > this.end) throw new RangeError("field past the end");
  }

  string(): string {
    const [start, end] = this.span();
    try {
      return utf8Text(this.bytes, start, end);
    } catch {
      throw new RangeError(`invalid UTF-8 in a string at byte ${start}`);
    }
  }
}

function expectWire(field: number, got: number, want: number, at: number): void {
  if (got !== want)
    throw new RangeError(`field ${field} has wire type ${got}, expected ${want} (byte ${at})`);
}

function decodeLabel(r: ProtoReader): [string, string] {
  let name = "";
  let value = "";
  while (r.pos < r.end) {
    const at = r.pos;
    const key = r.varint();
    const [field, wire] = [Math.floor(key / 8), key & 7];
    if (field === 1 || field === 2) {
      expectWire(field, wire, 2, at);
      if (field === 1) name = r.string();
      else value = r.string();
    } else r.skip(wire);
  }
  return [name, value];
}

export interface DecodeLimits {
  readonly maxSeries: number;
  readonly maxSamples: number;
}

/**
 * A WriteRequest read in columns, its label text left undecoded: each series' label fields are
 * a span of `bytes` (`labelSpans[2i]`, `labelSpans[2i + 1]`) — the ingest interns series by
 * those bytes (`series-interner.ts`) and decodes the text only for a label set it has not met.
 * Prometheus writes a series' labels before its samples, so the span is exactly its label
 * fields; a series whose labels come after another field has its whole message as the span and
 * `scattered[i]` set (read with `labelsInSpan`, which skips the other fields, and never interned).
 */
export interface WriteRequestColumns {
  readonly bytes: Uint8Array;
  readonly labelSpans: Uint32Array;
  readonly scattered: Uint8Array;
  /** `series + 1` entries: series i's samples are `[offsets[i], offsets[i + 1])`. */
  readonly offsets: Uint32Array;
  readonly timestamps: Float64Array;
  readonly values: Float64Array;
}

/**
 * A typical Sample's bytes on the wire (its key and length, the double's key and 8 bytes, the
 * time's key and varint): the columns' first size. A Sample may be shorter — protobuf leaves out
 * a zero value or time, down to 2 bytes — so the columns grow when full.
 */
const TYPICAL_SAMPLE_BYTES = 13;
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/** A Sample's first byte when its value comes first (field 1, fixed64), and the time's key (field 2, varint). */
const VALUE_KEY = 0x09;
const TIME_KEY = 0x10;
/** Time varints read by the common path: 7 bytes hold 49 bits (ms timestamps until the year 19800). */
const COMMON_TIME_BYTES = 7;

/**
 * The Sample every Prometheus writes — its value's key and 8 bytes, then its time's key and a
 * varint of at most 7 bytes, nothing after — read straight into the columns at `at`; false for
 * any other shape (a field left out, another order, a field repeated or unknown, a negative or
 * far time), which `readSampleInto` reads field by field. The same result either way, at about
 * half the cost per sample (no key decoding, no 64-bit varint).
 */
function readCommonSample(
  bytes: Uint8Array,
  pos: number,
  end: number,
  at: number,
  times: Float64Array,
  valueBytes: Uint8Array,
): boolean {
  if (end - pos < 11 || bytes[pos] !== VALUE_KEY || bytes[pos + 9] !== TIME_KEY) return false;
  let t = 0;
  let scale = 1;
  let p = pos + 10;
  for (;;) {
    if (p >= end || p - pos - 10 >= COMMON_TIME_BYTES) return false;
    const byte = bytes[p++]!;
    t += (byte & 0x7f) * scale;
    if (byte < 0x80) break;
    scale *= 128;
  }
  if (p !== end) return false;
  const to = at * 8;
  if (LITTLE_ENDIAN) for (let k = 0; k < 8; k++) valueBytes[to + k] = bytes[pos + 1 + k]!;
  else for (let k = 0; k < 8; k++) valueBytes[to + k] = bytes[pos + 8 - k]!;
  times[at] = t;
  return true;
}

/**
 * Reads one Sample message into the columns at `at`: the double's 8 bytes copied as they are
 * (a NaN's payload — StaleNaN — is kept bit for bit), the timestamp as a signed varint.
 */
function readSampleInto(r: ProtoReader, at: number, times: Float64Array, valueBytes: Uint8Array): void {
  let t = 0;
  while (r.pos < r.end) {
    const fieldAt = r.pos;
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === 1) {
      expectWire(field, wire, 1, fieldAt);
      if (r.pos + 8 > r.end) throw new RangeError(`truncated double at byte ${r.pos}`);
      const to = at * 8;
      if (LITTLE_ENDIAN) for (let k = 0; k < 8; k++) valueBytes[to + k] = r.bytes[r.pos + k]!;
      else for (let k = 0; k < 8; k++) valueBytes[to + k] = r.bytes[r.pos + 7 - k]!;
      r.pos += 8;
    } else if (field === 2) {
      expectWire(field, wire, 0, fieldAt);
      t = r.varint();
    } else r.skip(wire);
  }
  times[at] = t;
}

export function decodeWriteRequestColumns(bytes: Uint8Array, limits: DecodeLimits): WriteRequestColumns {
  const top = new ProtoReader(bytes);
  let capacity = Math.min(limits.maxSamples, Math.floor(bytes.length / TYPICAL_SAMPLE_BYTES) + 16);
  let timestamps = new Float64Array(capacity);
  let values = new Float64Array(capacity);
  let valueBytes = new Uint8Array(values.buffer);
  const spans: number[] = [];
  const scattered: number[] = [];
  const offsets: number[] = [0];
  let samples = 0;
  while (top.pos < top.end) {
    const at = top.pos;
    const key = top.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field !== 1) {
      top.skip(wire);
      continue;
    }
    expectWire(field, wire, 2, at);
    const end = top.fieldEnd();
    const start = top.pos;
    const outer = top.end;
    top.end = end;
    let labelEnd = -1;
    let spread = 0;
    while (top.pos < top.end) {
      const fieldAt = top.pos;
      const k = top.varint();
      const f = Math.floor(k / 8);
      const w = k & 7;
      if (f === 1 || f === 2 || f === 4) expectWire(f, w, 2, fieldAt);
      if (f === 1) {
        if (labelEnd !== -1) spread = 1;
        top.pos = top.fieldEnd();
      } else {
        if (labelEnd === -1) labelEnd = fieldAt;
        if (f === 2) {
          if (samples >= limits.maxSamples)
            throw new RangeError(`more than ${limits.maxSamples} samples in one request`);
          if (samples === capacity) {
            capacity = Math.min(limits.maxSamples, capacity * 2);
            const grownTimes = new Float64Array(capacity);
            const grownValues = new Float64Array(capacity);
            grownTimes.set(timestamps);
            grownValues.set(values);
            [timestamps, values, valueBytes] = [grownTimes, grownValues, new Uint8Array(grownValues.buffer)];
          }
          const sampleEnd = top.fieldEnd();
          if (!readCommonSample(bytes, top.pos, sampleEnd, samples, timestamps, valueBytes)) {
            top.end = sampleEnd;
            readSampleInto(top, samples, timestamps, valueBytes);
            top.end = end;
          }
          top.pos = sampleEnd;
          samples++;
        } else if (f === 4)
          throw new RangeError("native histograms are not supported: send classic histograms (le buckets)");
        else top.skip(w);
      }
    }
    top.pos = end;
    top.end = outer;
    spans.push(start, spread === 1 ? end : labelEnd === -1 ? end : labelEnd);
    scattered.push(spread);
    offsets.push(samples);
    if (offsets.length - 1 > limits.maxSeries)
      throw new RangeError(`more than ${limits.maxSeries} series in one request`);
  }
  return {
    bytes,
    labelSpans: Uint32Array.from(spans),
    scattered: Uint8Array.from(scattered),
    offsets: Uint32Array.from(offsets),
    timestamps: timestamps.subarray(0, samples),
    values: values.subarray(0, samples),
  };
}

/** The label pairs among the fields of `bytes[start, end)` (a TimeSeries' span), as sent. */
export function labelsInSpan(bytes: Uint8Array, start: number, end: number): Array<[string, string]> {
  const r = new ProtoReader(bytes, start, end);
  const labels: Array<[string, string]> = [];
  while (r.pos < r.end) {
    const at = r.pos;
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === 1) {
      expectWire(field, wire, 2, at);
      labels.push(r.within(decodeLabel));
    } else r.skip(wire);
  }
  return labels;
}

/** The request with its labels as text and one object per sample (the tests' and tools' form). */
export function decodeWriteRequest(bytes: Uint8Array, limits: DecodeLimits): WriteRequest {
  const columns = decodeWriteRequestColumns(bytes, limits);
  const series: DecodedSeries[] = [];
  for (let i = 0; i < columns.offsets.length - 1; i++) {
    const samples: Array<{ t: number; v: number }> = [];
    for (let j = columns.offsets[i]!; j < columns.offsets[i + 1]!; j++)
      samples.push({ t: columns.timestamps[j]!, v: columns.values[j]! });
    const labels = labelsInSpan(bytes, columns.labelSpans[2 * i]!, columns.labelSpans[2 * i + 1]!);
    series.push({ labels, samples });
  }
  return { series };
}

class ProtoWriter {
  readonly out: number[] = [];
  varint(value: number): void {
    // Two's complement in 64 bits: a negative int64 is a 10-byte varint, as protobuf writes it.
    const high = Math.floor(value / TWO_32);
    let lo = (value - high * TWO_32) >>> 0;
    let hi = high >>> 0;
    while (hi > 0 || lo > 0x7f) {
      this.out.push((lo & 0x7f) | 0x80);
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.out.push(lo);
  }
  bytes(field: number, payload: number[] | Uint8Array): void {
    this.varint(field * 8 + 2);
    this.varint(payload.length);
    for (const b of payload) this.out.push(b);
  }
}

const utf8Encoder = new TextEncoder();

/** The protobuf bytes of a WriteRequest (before snappy). */
export function encodeWriteRequest(
  series: ReadonlyArray<{ labels: Labels; samples: ReadonlyArray<{ t: number; v: number }> }>,
): Uint8Array {
  const top = new ProtoWriter();
  const scratch = new DataView(new ArrayBuffer(8));
  for (const s of series) {
    const ts = new ProtoWriter();
    for (const [name, value] of s.labels) {
      const label = new ProtoWriter();
      label.bytes(1, utf8Encoder.encode(name));
      label.bytes(2, utf8Encoder.encode(value));
      ts.bytes(1, label.out);
    }
    for (const { t, v } of s.samples) {
      const sample = new ProtoWriter();
      sample.varint((1 << 3) | 1);
      scratch.setFloat64(0, v, true);
      for (let k = 0; k < 8; k++) sample.out.push(scratch.getUint8(k));
      sample.varint((2 << 3) | 0);
      sample.varint(t);
      ts.bytes(2, sample.out);
    }
    top.bytes(1, ts.out);
  }
  return Uint8Array.from(top.out);
}
