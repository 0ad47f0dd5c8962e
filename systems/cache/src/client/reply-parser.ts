/**
 * An incremental RESP2 reply parser for the client side: feed socket chunks as they come
 * (split anywhere, many replies per chunk), pull complete replies with `next()`. The node's
 * `RespParser` reads requests (arrays of bulk strings); replies need every type, nested
 * arrays and nulls, so the client has its own.
 *
 * Nesting is kept on an explicit stack of partly filled arrays, so a reply split across
 * chunks resumes where it stopped instead of re-parsing from its start (an MGET of 10,000
 * values arriving in 100 chunks is parsed once, not 100 times). A large bulk waits for its
 * bytes without concatenating on every chunk.
 *
 * Values: `+OK` → "OK" (or a `StatusReply` when `tagStatus`, so a proxy can relay it as a
 * status), `-ERR x` → an `ErrorReply` value (a reply, not a failure of the parser: inside
 * an array it is just an element), `:5` → 5 (a bigint beyond 2^53), `$…` → a string in
 * `encoding`, `$-1`/`*-1` → null, `*n` → an array. RESP3's `_` null is read too.
 *
 * @example
 * const parser = new ReplyParser({ encoding: "utf8" });
 * parser.feed(Buffer.from("*2\r\n$1\r\na\r\n$-1\r\n+O"));
 * parser.next(); // ["a", null]
 * parser.next(); // NEED_MORE: "+O" has not ended
 */
import { clientErrors } from "./client-errors.ts";

export type Reply = string | number | bigint | null | ErrorReply | StatusReply | Reply[];

/** An error reply (`-MOVED 3999 …`), kept as a value: inside arrays, and until the caller decides. */
export class ErrorReply {
  readonly message: string;

  constructor(message: string) {
    this.message = message;
  }
}

/** A status reply (`+OK`), produced only when the parser is told to keep statuses apart from bulks. */
export class StatusReply {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

/** Returned by `next()` while a reply is still incomplete. */
export const NEED_MORE: unique symbol = Symbol("need more bytes");
/** Marks that an array was opened: its elements follow. */
const OPENED: unique symbol = Symbol("array opened");

export interface ReplyLimits {
  /** Largest bulk reply, in bytes (a 512 MB Redis value is the protocol's own maximum). */
  readonly maxBulkBytes: number;
  /** Most elements in one array reply. */
  readonly maxArrayLength: number;
  /** Deepest nesting of arrays (CLUSTER SLOTS needs 3). */
  readonly maxDepth: number;
  /** Longest header or status line. */
  readonly maxLineBytes: number;
}

export const defaultReplyLimits: Readonly<ReplyLimits> = Object.freeze({
  maxBulkBytes: 512 * 1024 * 1024,
  maxArrayLength: 16 * 1024 * 1024,
  maxDepth: 16,
  maxLineBytes: 64 * 1024,
});

export interface ReplyParserOptions {
  readonly encoding?: "utf8" | "latin1";
  readonly tagStatus?: boolean;
  readonly limits?: ReplyLimits;
}

interface Frame {
  readonly items: Reply[];
  filled: number;
}

const CR = 13;
const EMPTY = Buffer.alloc(0);

function protocolError(detail: string) {
  return clientErrors.create("CACHE_CLIENT_PROTOCOL_INVALID", { detail: `Protocol error: ${detail}` });
}

export class ReplyParser {
  readonly #encoding: "utf8" | "latin1";
  readonly #tagStatus: boolean;
  readonly #limits: ReplyLimits;
  #buf: Buffer = EMPTY;
  #pos = 0;
  /** Chunks held back while a large bulk arrives: concatenated once when it is complete. */
  #parts: Buffer[] = [];
  #partsBytes = 0;
  /** Length of a bulk whose header was read but whose bytes have not all arrived; -1 otherwise. */
  #bulkLen = -1;
  readonly #stack: Frame[] = [];

  constructor(options: ReplyParserOptions = {}) {
    this.#encoding = options.encoding ?? "utf8";
    this.#tagStatus = options.tagStatus ?? false;
    this.#limits = options.limits ?? defaultReplyLimits;
  }

  /** Bytes received but not yet turned into replies. */
  get bufferedBytes(): number {
    return this.#buf.length - this.#pos + this.#partsBytes;
  }

  feed(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#pos >= this.#buf.length && this.#partsBytes === 0) {
      this.#buf = chunk;
      this.#pos = 0;
    } else if (
      this.#bulkLen >= 0 &&
      this.#buf.length - this.#pos + this.#partsBytes + chunk.length < this.#bulkLen + 2
    ) {
      this.#parts.push(chunk);
      this.#partsBytes += chunk.length;
    } else {
      this.#buf = Buffer.concat([this.#buf.subarray(this.#pos), ...this.#parts, chunk]);
      this.#pos = 0;
      this.#parts = [];
      this.#partsBytes = 0;
    }
  }

  /** The next complete reply, or NEED_MORE. Throws CACHE_CLIENT_PROTOCOL_INVALID on bytes that are not RESP. */
  next(): Reply | typeof NEED_MORE {
    // Each pass consumes one value or returns, so the loop ends with the input.
    for (;;) {
      const value = this.#readValue();
      if (value === NEED_MORE) return NEED_MORE;
      if (value === OPENED) continue;
      const done = this.#settle(value);
      if (done !== NEED_MORE) return done;
    }
  }

  /** Places a finished value in its enclosing arrays; the top-level reply when one completes. */
  #settle(value: Reply): Reply | typeof NEED_MORE {
    let finished = value;
    while (this.#stack.length > 0) {
      const frame = this.#stack[this.#stack.length - 1]!;
      frame.items[frame.filled++] = finished;
      if (frame.filled < frame.items.length) return NEED_MORE;
      this.#stack.pop();
      finished = frame.items;
    }
    if (this.#pos >= this.#buf.length) {
      this.#buf = EMPTY;
      this.#pos = 0;
    }
    return finished;
  }

  /** One scalar, a null, an empty array, OPENED when a non-empty array was started, or NEED_MORE. */
  #readValue(): Reply | typeof NEED_MORE | typeof OPENED {
    if (this.#bulkLen >= 0) return this.#readBulkBody();
    if (this.#pos >= this.#buf.length) return NEED_MORE;
    const end = this.#lineEnd();
    if (end < 0) return NEED_MORE;
    const type = this.#buf[this.#pos]!;
    const start = this.#pos + 1;
    this.#pos = end + 2;
    switch (type) {
      case 43: // +
        return this.#status(this.#buf.toString(this.#encoding, start, end));
      case 45: // -
        return new ErrorReply(this.#buf.toString("utf8", start, end));
      case 58: // :
        return this.#integer(start, end);
      case 36: // $
        return this.#bulkHeader(start, end);
      case 42: // *
        return this.#arrayHeader(start, end);
      case 95: // _ (RESP3 null)
        return null;
      default:
        throw protocolError(`unexpected reply type byte ${type}`);
    }
  }

  #status(text: string): Reply {
    return this.#tagStatus ? new StatusReply(text) : text;
  }

  #lineEnd(): number {
    const buf = this.#buf;
    const last = Math.min(buf.length - 1, this.#pos + this.#limits.maxLineBytes + 1);
    for (let i = this.#pos; i < last; i++) if (buf[i] === CR) return i;
    if (buf.length - this.#pos > this.#limits.maxLineBytes) throw protocolError("reply line too long");
    return -1;
  }

  #integer(start: number, end: number): number | bigint {
    const text = this.#buf.toString("latin1", start, end);
    if (!/^-?\d{1,20}$/.test(text)) throw protocolError(`invalid integer reply '${text}'`);
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : BigInt(text);
  }

  #headerCount(start: number, end: number, max: number, what: string): number {
    const text = this.#buf.toString("latin1", start, end);
    const count = Number(text);
    if (!/^-?\d{1,12}$/.test(text) || count < -1 || count > max) {
      throw protocolError(`invalid ${what} length '${text}'`);
    }
    return count;
  }

  #bulkHeader(start: number, end: number): Reply | typeof NEED_MORE {
    const length = this.#headerCount(start, end, this.#limits.maxBulkBytes, "bulk");
    if (length === -1) return null;
    this.#bulkLen = length;
    return this.#readBulkBody();
  }

  #readBulkBody(): Reply | typeof NEED_MORE {
    const available = this.#buf.length - this.#pos + this.#partsBytes;
    if (available < this.#bulkLen + 2) return NEED_MORE;
    if (this.#partsBytes > 0) this.#joinParts();
    const value = this.#buf.toString(this.#encoding, this.#pos, this.#pos + this.#bulkLen);
    this.#pos += this.#bulkLen + 2;
    this.#bulkLen = -1;
    return value;
  }

  #joinParts(): void {
    this.#buf = Buffer.concat([this.#buf.subarray(this.#pos), ...this.#parts]);
    this.#pos = 0;
    this.#parts = [];
    this.#partsBytes = 0;
  }

  #arrayHeader(start: number, end: number): Reply | typeof OPENED {
    const length = this.#headerCount(start, end, this.#limits.maxArrayLength, "array");
    if (length === -1) return null;
    if (length === 0) return [];
    if (this.#stack.length >= this.#limits.maxDepth) throw protocolError("replies nested too deep");
    this.#stack.push({ items: new Array<Reply>(length), filled: 0 });
    return OPENED;
  }
}
