/**
 * Snappy's block format (what Prometheus remote-write 1.0 compresses each request with,
 * `Content-Encoding: snappy`): a varint of the uncompressed length, then literals and
 * back-references (copies with 1-, 2- or 4-byte offsets). The decoder refuses anything
 * malformed — a copy before the start, a length past the declared size, a declared size past
 * `maxBytes` — with a RangeError the ingest turns into a 400. The encoder (greedy, 4-byte
 * hash matches) serves the agent and the tests; any valid encoder's output decodes here.
 *
 * @example
 * const packed = snappyCompress(new TextEncoder().encode("abcabcabcabc"));
 * snappyUncompress(packed, 1 << 20); // the 12 bytes back
 */

/** Literals and copies up to this many bytes are copied in a loop: a call (set, copyWithin) costs more. */
const SHORT_RUN = 16;

function readUvarint(input: Uint8Array, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 5; i++) {
    const byte = input[at + i];
    if (byte === undefined) throw new RangeError("snappy: truncated length");
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, at + i + 1];
    scale *= 0x80;
  }
  throw new RangeError("snappy: length varint too long");
}

/** The uncompressed length a block declares (checked against a bound before any work). */
export function snappyDeclaredLength(input: Uint8Array): number {
  return readUvarint(input, 0)[0];
}

export function snappyUncompress(input: Uint8Array, maxBytes: number): Uint8Array {
  const [length, start] = readUvarint(input, 0);
  if (length > maxBytes) throw new RangeError(`snappy: declared length ${length} exceeds ${maxBytes} bytes`);
  const out = new Uint8Array(length);
  let o = 0;
  let i = start;
  while (i < input.length) {
    const tag = input[i++]!;
    const kind = tag & 3;
    if (kind === 0) {
      let n = tag >>> 2;
      if (n >= 60) {
        const bytes = n - 59;
        if (i + bytes > input.length) throw new RangeError("snappy: truncated literal length");
        n = 0;
        for (let k = 0; k < bytes; k++) n += input[i + k]! * 2 ** (8 * k);
        i += bytes;
      }
      n += 1;
      if (i + n > input.length || o + n > length) throw new RangeError("snappy: literal past the end");
      // A request's literals are mostly a sample's few changing bytes: a loop, not a subarray each.
      if (n <= SHORT_RUN) for (let k = 0; k < n; k++) out[o + k] = input[i + k]!;
      else out.set(input.subarray(i, i + n), o);
      i += n;
      o += n;
      continue;
    }
    let n: number;
    let offset: number;
    if (kind === 1) {
      if (i >= input.length) throw new RangeError("snappy: truncated copy");
      n = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | input[i++]!;
    } else if (kind === 2) {
      if (i + 2 > input.length) throw new RangeError("snappy: truncated copy");
      n = (tag >>> 2) + 1;
      offset = input[i]! | (input[i + 1]! << 8);
      i += 2;
    } else {
      if (i + 4 > input.length) throw new RangeError("snappy: truncated copy");
      n = (tag >>> 2) + 1;
      offset = (input[i]! | (input[i + 1]! << 8) | (input[i + 2]! << 16) | (input[i + 3]! << 24)) >>> 0;
      i += 4;
    }
    if (offset === 0 || offset > o || o + n > length) throw new RangeError("snappy: bad copy");
    // A copy that overlaps what it writes (offset < length repeats a pattern) goes byte by byte.
    if (n > SHORT_RUN && offset >= n) out.copyWithin(o, o - offset, o - offset + n);
    else for (let k = 0; k < n; k++) out[o + k] = out[o + k - offset]!;
    o += n;
  }
  if (o !== length) throw new RangeError(`snappy: ${o} bytes decoded, ${length} declared`);
  return out;
}

function pushLiteral(out: number[], input: Uint8Array, from: number, to: number): void {
  let start = from;
  while (start < to) {
    const n = Math.min(to - start, 65_536);
    if (n <= 60) out.push((n - 1) << 2);
    else if (n <= 256) out.push(60 << 2, n - 1);
    else out.push(61 << 2, (n - 1) & 0xff, (n - 1) >>> 8);
    for (let k = start; k < start + n; k++) out.push(input[k]!);
    start += n;
  }
}

function pushCopy(out: number[], offset: number, length: number): void {
  let rest = length;
  while (rest > 0) {
    const n = Math.min(rest, 64);
    out.push(((n - 1) << 2) | 2, offset & 0xff, offset >>> 8);
    rest -= n;
  }
}

/** Greedy compression with 4-byte matches within 64 KiB (2-byte-offset copies only). */
export function snappyCompress(input: Uint8Array): Uint8Array {
  const out: number[] = [];
  let n = input.length;
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  const table = new Map<number, number>();
  let literalStart = 0;
  let i = 0;
  while (i + 4 <= input.length) {
    const key = (input[i]! | (input[i + 1]! << 8) | (input[i + 2]! << 16) | (input[i + 3]! << 24)) >>> 0;
    const candidate = table.get(key);
    table.set(key, i);
    if (candidate !== undefined && i - candidate <= 65_535) {
      let length = 4;
      while (i + length < input.length && input[candidate + length] === input[i + length]) length++;
      pushLiteral(out, input, literalStart, i);
      pushCopy(out, i - candidate, length);
      i += length;
      literalStart = i;
    } else i++;
  }
  pushLiteral(out, input, literalStart, input.length);
  return Uint8Array.from(out);
}
