/**
 * A Gorilla chunk (MT-17; Pelkonen et al., VLDB 2015, as Prometheus's XOR chunk lays it out):
 * up to 120 samples of one series packed bit by bit.
 *
 * - Timestamps: the first as a zig-zag varint, the second as a varint delta, every later one
 *   as the delta of deltas in a prefix code — `0` (same interval: one bit for a regular
 *   scrape), `10`+14 bits, `110`+17, `1110`+20, `1111`+64.
 * - Values: the first as its 64 bits, every later one XORed with the previous. Equal → `0`;
 *   otherwise `1` then either `0` + the meaningful bits inside the previous window of leading
 *   and trailing zeros, or `1` + 5 bits of leading zeros + 6 bits of length + the bits.
 *
 * Values round-trip bit for bit, NaN payloads included: Prometheus's StaleNaN
 * (0x7ff0000000000002) marks a series gone and must come back as exactly that NaN.
 *
 * @example
 * const chunk = new GorillaChunkEncoder();
 * chunk.append(1_000, 1.5);
 * chunk.append(16_000, 1.5);
 * const sealed = chunk.seal();               // { bytes, bitLength, count: 2, minT: 1000, maxT: 16000 }
 * decodeChunk(sealed);                       // { timestamps: [1000, 16000], values: Float64Array [1.5, 1.5] }
 */
import { assert } from "@casebook/kit/assert";
import { BitReader, BitWriter } from "./bit-stream.ts";

/** Prometheus cuts a chunk at 120 samples: 30 min at a 15 s scrape, where compression flattens out. */
export const MAX_SAMPLES_PER_CHUNK = 120;
const TWO_32 = 2 ** 32;

/** An immutable chunk: what the head seals and a block persists. */
export interface SealedChunk {
  readonly bytes: Uint8Array;
  readonly bitLength: number;
  readonly count: number;
  readonly minT: number;
  readonly maxT: number;
}

export interface DecodedChunk {
  readonly timestamps: number[];
  readonly values: Float64Array;
}

const scratch = new DataView(new ArrayBuffer(8));

function floatHi(value: number): number {
  scratch.setFloat64(0, value);
  return scratch.getUint32(0);
}
function floatLo(): number {
  return scratch.getUint32(4);
}
function floatOf(hi: number, lo: number): number {
  scratch.setUint32(0, hi);
  scratch.setUint32(4, lo);
  return scratch.getFloat64(0);
}

function clz64(hi: number, lo: number): number {
  return hi !== 0 ? Math.clz32(hi) : 32 + Math.clz32(lo);
}
function ctz32(x: number): number {
  return 31 - Math.clz32(x & -x);
}
function ctz64(hi: number, lo: number): number {
  return lo !== 0 ? ctz32(lo) : 32 + ctz32(hi);
}

function writeVarint(writer: BitWriter, unsigned: number): void {
  let rest = unsigned;
  while (rest >= 0x80) {
    writer.writeBits((rest % 0x80) | 0x80, 8);
    rest = Math.floor(rest / 0x80);
  }
  writer.writeBits(rest, 8);
}
function readVarint(reader: BitReader): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const byte = reader.readBits(8);
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 0x80;
  }
  throw new RangeError("gorilla chunk: varint longer than 10 bytes");
}
const zigzag = (n: number): number => (n >= 0 ? n * 2 : -n * 2 - 1);
const unzigzag = (z: number): number => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);

function writeDodBucket(writer: BitWriter, dod: number, prefix: number, prefixBits: number, n: number): void {
  writer.writeBits(prefix, prefixBits);
  writer.writeBits(dod < 0 ? dod + 2 ** n : dod, n);
}

/** The delta-of-delta code: the shortest bucket holding `dod` (two's complement in n bits). */
function writeDod(writer: BitWriter, dod: number): void {
  if (dod === 0) {
    writer.writeBit(0);
    return;
  }
  // Buckets of 14, 17 and 20 bits behind prefixes 10, 110, 1110 (no table: this runs per sample).
  if (dod >= -(2 ** 13) + 1 && dod <= 2 ** 13) writeDodBucket(writer, dod, 0b10, 2, 14);
  else if (dod >= -(2 ** 16) + 1 && dod <= 2 ** 16) writeDodBucket(writer, dod, 0b110, 3, 17);
  else if (dod >= -(2 ** 19) + 1 && dod <= 2 ** 19) writeDodBucket(writer, dod, 0b1110, 4, 20);
  else {
    writer.writeBits(0b1111, 4);
    const hi = Math.floor(dod / TWO_32);
    writer.writeBits64(hi | 0, dod - hi * TWO_32, 64);
  }
}

function readDod(reader: BitReader): number {
  let ones = 0;
  while (ones < 4 && reader.readBit() === 1) ones++;
  if (ones === 0) return 0;
  if (ones === 4) {
    const hi = reader.readBits(32) | 0;
    return hi * TWO_32 + reader.readBits(32);
  }
  const n = ones === 1 ? 14 : ones === 2 ? 17 : 20;
  const raw = reader.readBits(n);
  return raw > 2 ** (n - 1) ? raw - 2 ** n : raw;
}

export class GorillaChunkEncoder {
  readonly #writer = new BitWriter(64);
  #count = 0;
  #minT = 0;
  #lastT = 0;
  #lastDelta = 0;
  #lastHi = 0;
  #lastLo = 0;
  /** 0xff until the first window is written, as in Prometheus. */
  #leading = 0xff;
  #trailing = 0;

  get count(): number {
    return this.#count;
  }
  get full(): boolean {
    return this.#count >= MAX_SAMPLES_PER_CHUNK;
  }
  get minT(): number {
    return this.#minT;
  }
  get maxT(): number {
    return this.#lastT;
  }
  get sizeBytes(): number {
    return (this.#writer.bitLength + 7) >>> 3;
  }

  /** Appends one sample; `t` must be a safe integer above the previous one (the head checks order first). */
  append(t: number, value: number): void {
    assert(Number.isSafeInteger(t), "gorilla chunk: timestamp must be an integer");
    assert(!this.full, "gorilla chunk: full");
    assert(this.#count === 0 || t > this.#lastT, "gorilla chunk: timestamps must increase");
    const hi = floatHi(value);
    const lo = floatLo();
    if (this.#count === 0) {
      writeVarint(this.#writer, zigzag(t));
      this.#writer.writeBits64(hi, lo, 64);
      this.#minT = t;
    } else {
      const delta = t - this.#lastT;
      if (this.#count === 1) writeVarint(this.#writer, delta);
      else writeDod(this.#writer, delta - this.#lastDelta);
      this.#lastDelta = delta;
      this.#writeXor(hi, lo);
    }
    this.#lastT = t;
    this.#lastHi = hi;
    this.#lastLo = lo;
    this.#count++;
  }

  #writeXor(hi: number, lo: number): void {
    const xHi = (hi ^ this.#lastHi) >>> 0;
    const xLo = (lo ^ this.#lastLo) >>> 0;
    const w = this.#writer;
    if (xHi === 0 && xLo === 0) {
      w.writeBit(0);
      return;
    }
    w.writeBit(1);
    const leading = Math.min(31, clz64(xHi, xLo));
    const trailing = ctz64(xHi, xLo);
    if (this.#leading !== 0xff && leading >= this.#leading && trailing >= this.#trailing) {
      w.writeBit(0);
      writeWindow(w, xHi, xLo, this.#trailing, 64 - this.#leading - this.#trailing);
      return;
    }
    this.#leading = leading;
    this.#trailing = trailing;
    const significant = 64 - leading - trailing;
    w.writeBit(1);
    w.writeBits(leading, 5);
    // 64 significant bits do not fit in 6 bits: written as 0, read back as 64 (Prometheus does the same).
    w.writeBits(significant & 63, 6);
    writeWindow(w, xHi, xLo, trailing, significant);
  }

  seal(): SealedChunk {
    assert(this.#count > 0, "gorilla chunk: nothing to seal");
    return {
      bytes: this.#writer.bytes(),
      bitLength: this.#writer.bitLength,
      count: this.#count,
      minT: this.#minT,
      maxT: this.#lastT,
    };
  }
}

/** Writes bits [trailing, trailing + n) of hi:lo. */
function writeWindow(w: BitWriter, hi: number, lo: number, trailing: number, n: number): void {
  let sHi = hi;
  let sLo = lo;
  if (trailing >= 32) {
    sLo = hi >>> (trailing - 32);
    sHi = 0;
  } else if (trailing > 0) {
    sLo = ((lo >>> trailing) | (hi << (32 - trailing))) >>> 0;
    sHi = hi >>> trailing;
  }
  w.writeBits64(sHi, sLo, n);
}

/** Reads n bits and shifts them left by `trailing`: the XOR as hi:lo. */
/** readWindow's result (hi, lo): module scratch rather than a pair allocated per sample. */
let windowHi = 0;
let windowLo = 0;

function readWindow(r: BitReader, n: number, trailing: number): void {
  let hi = n > 32 ? r.readBits(n - 32) : 0;
  let lo = r.readBits(Math.min(32, n));
  if (trailing >= 32) {
    hi = trailing === 64 ? 0 : (lo << (trailing - 32)) >>> 0;
    lo = 0;
  } else if (trailing > 0) {
    hi = ((hi << trailing) | (lo >>> (32 - trailing))) >>> 0;
    lo = (lo << trailing) >>> 0;
  }
  windowHi = hi;
  windowLo = lo;
}

/** Every sample of a sealed chunk, in time order. Throws RangeError on bytes that are not a chunk. */
export function decodeChunk(chunk: SealedChunk): DecodedChunk {
  const timestamps: number[] = [];
  const values = new Float64Array(chunk.count);
  decodeChunkInto(chunk, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, timestamps, values);
  return { timestamps, values };
}

/**
 * The chunk's samples in [mint, maxt] appended to `timestamps` and written to `values` at the
 * same index (`values` must have room): the query path decodes straight into its result.
 * Returns how many samples it added. Stops at the first sample past `maxt`.
 */
export function decodeChunkInto(
  chunk: SealedChunk,
  mint: number,
  maxt: number,
  timestamps: number[],
  values: Float64Array,
): number {
  const reader = new BitReader(chunk.bytes, chunk.bitLength);
  const before = timestamps.length;
  let t = 0;
  let delta = 0;
  let hi = 0;
  let lo = 0;
  let leading = 0;
  let trailing = 0;
  for (let i = 0; i < chunk.count; i++) {
    if (i === 0) {
      t = unzigzag(readVarint(reader));
      hi = reader.readBits(32);
      lo = reader.readBits(32);
    } else {
      delta = i === 1 ? readVarint(reader) : delta + readDod(reader);
      t += delta;
      if (reader.readBit() === 1) {
        if (reader.readBit() === 1) {
          leading = reader.readBits(5);
          const significant = reader.readBits(6) || 64;
          trailing = 64 - leading - significant;
          if (trailing < 0) throw new RangeError("gorilla chunk: bad XOR window");
        }
        readWindow(reader, 64 - leading - trailing, trailing);
        hi = (hi ^ windowHi) >>> 0;
        lo = (lo ^ windowLo) >>> 0;
      }
    }
    if (t > maxt) break;
    if (t < mint) continue;
    values[timestamps.length] = floatOf(hi, lo);
    timestamps.push(t);
  }
  return timestamps.length - before;
}
