/**
 * Bit-level writer and reader, most significant bit first, the substrate of the Gorilla chunk
 * (`gorilla-chunk.ts`): its encodings are 1-, 2-, 14-bit codes that do not align to bytes.
 * Values are written in pieces of at most 32 bits (JavaScript's bitwise operators are 32-bit),
 * and 64-bit values as a high and a low half, so no BigInt is on the hot path.
 *
 * @example
 * const writer = new BitWriter(16);
 * writer.writeBits(0b101, 3);
 * writer.writeBits(0xabcd, 16);
 * const reader = new BitReader(writer.bytes(), writer.bitLength);
 * reader.readBits(3);  // 5
 * reader.readBits(16); // 0xabcd
 */
import { assert } from "@casebook/kit/assert";

/** A chunk never grows past this: 120 samples at the worst encoding are ~2.3 KiB. */
export const MAX_BIT_BUFFER_BYTES = 1 << 20;

/** Low `n` bits set, for n in [0, 32]. */
function lowMask(n: number): number {
  return n === 32 ? 0xffffffff : (1 << n) - 1;
}

export class BitWriter {
  #buffer: Uint8Array;
  #bits = 0;

  constructor(initialBytes = 64) {
    this.#buffer = new Uint8Array(Math.max(1, initialBytes));
  }

  /** Bits written so far. */
  get bitLength(): number {
    return this.#bits;
  }

  #ensure(extraBits: number): void {
    const needed = (this.#bits + extraBits + 7) >>> 3;
    if (needed <= this.#buffer.length) return;
    assert(needed <= MAX_BIT_BUFFER_BYTES, `bit stream: ${needed} bytes is past the bound`);
    const grown = new Uint8Array(Math.min(MAX_BIT_BUFFER_BYTES, Math.max(needed, this.#buffer.length * 2)));
    grown.set(this.#buffer);
    this.#buffer = grown;
  }

  writeBit(bit: 0 | 1 | boolean): void {
    this.#ensure(1);
    if (bit) this.#buffer[this.#bits >>> 3]! |= 0x80 >>> (this.#bits & 7);
    this.#bits++;
  }

  /** The low `n` bits of `value` (n in [0, 32]), most significant first. */
  writeBits(value: number, n: number): void {
    assert(n >= 0 && n <= 32, `bit stream: ${n} bits in one write`);
    this.#ensure(n);
    let remaining = n;
    let v = (value & lowMask(n)) >>> 0;
    while (remaining > 0) {
      const free = 8 - (this.#bits & 7);
      const take = Math.min(free, remaining);
      const shift = remaining - take;
      const piece = (v >>> shift) & lowMask(take);
      this.#buffer[this.#bits >>> 3]! |= piece << (free - take);
      this.#bits += take;
      remaining -= take;
      v = (v & lowMask(shift)) >>> 0;
    }
  }

  /** The low `n` bits (n in [0, 64]) of the 64-bit value hi:lo. */
  writeBits64(hi: number, lo: number, n: number): void {
    if (n > 32) {
      this.writeBits(hi, n - 32);
      this.writeBits(lo, 32);
    } else {
      this.writeBits(lo, n);
    }
  }

  /** A copy of the written bytes (the last one zero-padded). */
  bytes(): Uint8Array {
    return this.#buffer.slice(0, (this.#bits + 7) >>> 3);
  }
}

export class BitReader {
  readonly #buffer: Uint8Array;
  readonly #limit: number;
  #bits = 0;

  /** Reads at most `bitLength` bits of `buffer` (default: all of them). */
  constructor(buffer: Uint8Array, bitLength = buffer.length * 8) {
    assert(bitLength <= buffer.length * 8, "bit stream: length past the buffer");
    this.#buffer = buffer;
    this.#limit = bitLength;
  }

  get position(): number {
    return this.#bits;
  }

  readBit(): number {
    assert(this.#bits < this.#limit, "bit stream: read past the end");
    const bit = (this.#buffer[this.#bits >>> 3]! >>> (7 - (this.#bits & 7))) & 1;
    this.#bits++;
    return bit;
  }

  /** `n` bits (n in [0, 32]) as an unsigned number. */
  readBits(n: number): number {
    const end = this.#bits + n;
    assert(n >= 0 && n <= 32 && end <= this.#limit, "bit stream: read past the end");
    if (n === 0) return 0;
    const buffer = this.#buffer;
    // The bytes holding bits [start, end), first byte's leading bits masked off: at most 40
    // bits, exact in a double; then the bits after `end` in the last byte dropped.
    let i = this.#bits >>> 3;
    let value = buffer[i]! & (0xff >>> (this.#bits & 7));
    const last = (end - 1) >>> 3;
    while (i < last) value = value * 256 + buffer[++i]!;
    this.#bits = end;
    return Math.floor(value / DROP[7 - ((end - 1) & 7)]!);
  }
}

/** 2^k for the bits a read drops from its last byte. */
const DROP = [1, 2, 4, 8, 16, 32, 64, 128] as const;
