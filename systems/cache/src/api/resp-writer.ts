/**
 * Encodes RESP replies into large shared slabs, so that a whole pipelined batch
 * (every reply to one socket read) leaves as ONE `socket.write` of a slab slice:
 * no per-reply Buffer, no string concatenation, no Buffer.concat on the hot path.
 * A slice handed to a socket is never written again: the next batch starts after it,
 * and a full slab is simply replaced (the sockets keep the old one alive until sent).
 *
 * Strings are latin1 (one byte per char), the keyspace's representation: binary safe.
 * RESP3 (after `HELLO 3`) changes nulls to `_` and maps to `%`; everything else is shared.
 *
 * @example
 * const writer = new ReplyWriter();
 * writer.begin(2);
 * writer.simple("OK");
 * writer.bulk("v");
 * writer.nullBulk();
 * const parts = writer.finish(); // [Buffer "+OK\r\n$1\r\nv\r\n$-1\r\n"]
 */

/** Node's latin1 encoder without the encoding-name dispatch of `buf.write(s, o, "latin1")`. */
interface Latin1Buffer extends Buffer {
  latin1Write(text: string, offset: number, length?: number): number;
}

/** One slab: big enough that a pipelined batch of small replies fits in one. */
export const SLAB_BYTES = 256 * 1024;
/** Replies larger than this get a buffer of their own instead of wasting the rest of a slab. */
const OWN_BUFFER_FROM_BYTES = SLAB_BYTES / 4;
/** Below this length a JS loop beats the native call's fixed cost. */
const SHORT_STRING_CHARS = 24;
/** Bytes of `$<len>\r\n` or `:<int>\r\n` headers at most: type byte, sign, 20 digits, CRLF. */
const MAX_HEADER_BYTES = 24;

const CR = 13;
const LF = 10;

function ascii(text: string): Uint8Array {
  return Uint8Array.from(text, (ch) => ch.charCodeAt(0));
}

const EMPTY = Buffer.alloc(0);
const NULL_BULK_RESP2 = ascii("$-1\r\n");
const NULL_ARRAY_RESP2 = ascii("*-1\r\n");
const NULL_RESP3 = ascii("_\r\n");

export type Protocol = 2 | 3;

export class ReplyWriter {
  #slab: Latin1Buffer = allocSlab();
  #start = 0;
  #pos = 0;
  /** Parts cut before the batch's last one (a full slab, a big reply); usually empty. */
  readonly #parts: Buffer[] = [];
  #partsBytes = 0;
  /** What finish() returns for the usual one-part batch, reused so that no array changes length. */
  readonly #onePart: Buffer[] = [EMPTY];
  #protocol: Protocol = 2;

  /** Starts a batch for a connection speaking `protocol`. */
  begin(protocol: Protocol): void {
    this.#protocol = protocol;
    this.#start = this.#pos;
    // Setting an array's length is a runtime call: only the rare multi-part batch pays it.
    if (this.#parts.length > 0) this.#parts.length = 0;
    this.#partsBytes = 0;
  }

  get protocol(): Protocol {
    return this.#protocol;
  }

  /** Switches the protocol mid-batch (HELLO, RESET): replies from here on use it. */
  useProtocol(protocol: Protocol): void {
    this.#protocol = protocol;
  }

  /** Bytes written since `begin`. */
  get batchBytes(): number {
    return this.#partsBytes + this.#pos - this.#start;
  }

  /**
   * The batch's bytes as buffers to write in order (usually one); empty when nothing was
   * written. The array is reused by the next batch: write its buffers before calling begin().
   */
  finish(): readonly Buffer[] {
    if (this.#parts.length === 0) {
      if (this.#pos === this.#start) return this.#parts;
      // The whole batch is in this slab; the next batch starts at #pos, so these bytes stay as they are.
      this.#onePart[0] = this.#slab.subarray(this.#start, this.#pos);
      return this.#onePart;
    }
    if (this.#pos > this.#start) this.#cut();
    return this.#parts;
  }

  /** `+text`: text must not contain CR or LF (callers pass constants). */
  simple(text: string): void {
    this.#ensure(text.length + 3);
    this.#slab[this.#pos++] = 43;
    this.#text(text);
    this.#crlf();
  }

  /** `-text`: a Redis error line, e.g. "ERR syntax error"; CR and LF are replaced by spaces. */
  error(text: string): void {
    const line = /[\r\n]/.test(text) ? text.replace(/[\r\n]+/g, " ") : text;
    this.#ensure(line.length + 3);
    this.#slab[this.#pos++] = 45;
    this.#text(line);
    this.#crlf();
  }

  /** `:n`, for safe integers and bigints (INCRBY near the int64 limits). */
  integer(value: number | bigint): void {
    if (typeof value === "bigint") {
      this.#ensure(MAX_HEADER_BYTES);
      this.#slab[this.#pos++] = 58;
      this.#text(value.toString());
      this.#crlf();
      return;
    }
    this.#header(58, value);
  }

  /** `$len\r\nvalue\r\n`. */
  bulk(value: string): void {
    const length = value.length;
    if (length + MAX_HEADER_BYTES + 2 > OWN_BUFFER_FROM_BYTES) {
      this.#bigBulk(value);
      return;
    }
    this.#header(36, length);
    this.#ensure(length + 2);
    this.#text(value);
    this.#crlf();
  }

  /** Text for people (INFO): a verbatim string `=len\r\ntxt:…` in RESP3, a bulk string in RESP2. */
  verbatim(text: string): void {
    if (this.#protocol === 2) {
      this.bulk(text);
      return;
    }
    this.#header(61, text.length + 4);
    this.#ensure(text.length + 6);
    this.#text("txt:");
    this.#text(text);
    this.#crlf();
  }

  /** A missing value: `$-1` in RESP2, `_` in RESP3. */
  nullBulk(): void {
    this.#raw(this.#protocol === 3 ? NULL_RESP3 : NULL_BULK_RESP2);
  }

  /** A missing array: `*-1` in RESP2, `_` in RESP3. */
  nullArray(): void {
    this.#raw(this.#protocol === 3 ? NULL_RESP3 : NULL_ARRAY_RESP2);
  }

  /** `*n`: the next n replies are its elements. */
  arrayHeader(count: number): void {
    this.#header(42, count);
  }

  /** `%n` in RESP3; in RESP2 a flat array of 2n elements (key, value, key, value…), as Redis does. */
  mapHeader(pairs: number): void {
    if (this.#protocol === 3) this.#header(37, pairs);
    else this.#header(42, pairs * 2);
  }

  /** `~n` in RESP3 (a set), an array in RESP2. */
  setHeader(count: number): void {
    this.#header(this.#protocol === 3 ? 126 : 42, count);
  }

  /** Pre-encoded bytes, e.g. a constant reply. */
  raw(bytes: Uint8Array): void {
    this.#raw(bytes);
  }

  #raw(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    const slab = this.#slab;
    let pos = this.#pos;
    for (let i = 0; i < bytes.length; i++) slab[pos++] = bytes[i]!;
    this.#pos = pos;
  }

  #header(type: number, value: number): void {
    this.#ensure(MAX_HEADER_BYTES);
    const slab = this.#slab;
    slab[this.#pos++] = type;
    if (value < 0) {
      slab[this.#pos++] = 45;
      value = -value;
    }
    if (value < 10) {
      slab[this.#pos++] = 48 + value;
    } else {
      this.#digits(value);
    }
    slab[this.#pos++] = CR;
    slab[this.#pos++] = LF;
  }

  #digits(value: number): void {
    if (!Number.isSafeInteger(value)) {
      this.#text(String(value));
      return;
    }
    let width = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) width += 1;
    const slab = this.#slab;
    let pos = this.#pos + width - 1;
    for (let rest = value; pos >= this.#pos; rest = Math.floor(rest / 10)) slab[pos--] = 48 + (rest % 10);
    this.#pos += width;
  }

  /** Writes latin1 text; the caller has ensured room. */
  #text(text: string): void {
    const length = text.length;
    if (length <= SHORT_STRING_CHARS) {
      const slab = this.#slab;
      let pos = this.#pos;
      for (let i = 0; i < length; i++) slab[pos++] = text.charCodeAt(i);
      this.#pos = pos;
      return;
    }
    this.#pos += this.#slab.latin1Write(text, this.#pos, length);
  }

  #crlf(): void {
    this.#slab[this.#pos++] = CR;
    this.#slab[this.#pos++] = LF;
  }

  /** A reply too big for a slab gets its own exactly-sized buffer, after what the batch has so far. */
  #bigBulk(value: string): void {
    this.#header(36, value.length);
    if (this.#pos > this.#start) this.#cut();
    const own = Buffer.allocUnsafeSlow(value.length + 2) as Latin1Buffer;
    own.latin1Write(value, 0, value.length);
    own[value.length] = CR;
    own[value.length + 1] = LF;
    this.#parts.push(own);
    this.#partsBytes += own.length;
  }

  /** Makes room for `bytes`: a fresh slab when this one is full (the written part is kept as a part). */
  #ensure(bytes: number): void {
    if (this.#pos + bytes <= this.#slab.length) return;
    if (this.#pos > this.#start) this.#cut();
    this.#slab = allocSlab(Math.max(SLAB_BYTES, bytes));
    this.#start = 0;
    this.#pos = 0;
  }

  #cut(): void {
    const part = this.#slab.subarray(this.#start, this.#pos);
    this.#parts.push(part);
    this.#partsBytes += part.length;
    this.#start = this.#pos;
  }
}

function allocSlab(bytes = SLAB_BYTES): Latin1Buffer {
  // Unpooled: a slab is already large, and Node's 8 KiB pool would only add a copy.
  return Buffer.allocUnsafeSlow(bytes) as Latin1Buffer;
}
