/**
 * An incremental RESP request parser: feed it socket chunks as they arrive (split
 * anywhere, several commands per chunk) and pull complete commands with `next()`.
 * It reads both request forms Redis accepts: multibulk (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`,
 * what client libraries send) and inline (`GET k\r\n`, what telnet sends).
 *
 * Arguments come out as latin1 strings: one char per byte, so any binary key or value
 * round-trips, and V8 stores them compactly (one byte per char) as the keyspace's keys.
 *
 * Every buffer has a named bound (`RespLimits`); bad input throws CACHE_PROTOCOL_INVALID
 * (or CACHE_QUERY_TOO_LARGE) carrying Redis's own message, after which the parser stays
 * failed: the server writes `-ERR <message>` and closes the connection.
 *
 * @example
 * const parser = new RespParser();
 * parser.feed(Buffer.from("*2\r\n$3\r\nGET\r\n$1"));
 * parser.next(); // undefined: the key has not arrived yet
 * parser.feed(Buffer.from("\r\nk\r\nPING\r\n"));
 * parser.next(); // ["GET", "k"]
 * parser.next(); // ["PING"]
 */
import type { CasebookError } from "@casebook/kit/errors";
import { cacheErrors } from "../errors.ts";
import { splitInlineArgs } from "./inline-args.ts";
import { internedName, MAX_INTERNED_NAME_BYTES } from "./interned-names.ts";
/** The bounds of one connection's input. */
export interface RespLimits {
  /** Largest bulk argument, in bytes (Redis's proto-max-bulk-len is 512 MB; V8 strings stop near 512 MiB). */
  readonly maxBulkBytes: number;
  /** Most arguments in one multibulk command (Redis 6's bound before ACLs: 1024 × 1024). */
  readonly maxMultibulkCount: number;
  /** Longest inline command line, and longest `*`/`$` header line (Redis's PROTO_INLINE_MAX_SIZE). */
  readonly maxInlineBytes: number;
  /** Bytes one command may hold in memory while it arrives (Redis's client-query-buffer-limit is 1 GB). */
  readonly maxQueryBytes: number;
}

export const defaultRespLimits: Readonly<RespLimits> = Object.freeze({
  maxBulkBytes: 256 * 1024 * 1024,
  maxMultibulkCount: 1024 * 1024,
  maxInlineBytes: 64 * 1024,
  maxQueryBytes: 512 * 1024 * 1024,
});

const CR = 13;
const LF = 10;
const STAR = 42;
const DOLLAR = 36;
const MINUS = 45;
/**
 * Arguments array slots allocated up front from a multibulk's announced count, so the array is
 * made once at its size (Redis's own cap on preallocating argv): a count is only a claim until
 * the bulks arrive, and a larger command's array grows as they do.
 */
const MAX_PREALLOCATED_ARGS = 1024;
/** Digits a header number may have: 18 keeps the parse exact in a double and covers every bound. */
const MAX_HEADER_DIGITS = 18;
const EMPTY = Buffer.alloc(0);

/** Node's latin1 decoder without `toString`'s encoding-name dispatch (the hot path's one native call). */
interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
}

function protocolError(message: string): CasebookError {
  return cacheErrors.create("CACHE_PROTOCOL_INVALID", { detail: `Protocol error: ${message}` });
}

/** Parses the integer in buf[start, end) like Redis's string2ll; NaN when it is not one. */
function parseHeaderInt(buf: Buffer, start: number, end: number): number {
  let i = start;
  let sign = 1;
  if (i < end && buf[i] === MINUS) {
    sign = -1;
    i += 1;
  }
  if (i === end || end - i > MAX_HEADER_DIGITS) return Number.NaN;
  // Redis refuses leading zeros ("01"), except "0" itself.
  if (buf[i] === 48 && end - i > 1) return Number.NaN;
  let value = 0;
  for (; i < end; i++) {
    const digit = buf[i]! - 48;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return sign * value;
}

export class RespParser {
  readonly #limits: RespLimits;
  #buf: Buffer = EMPTY;
  #pos = 0;
  /** Chunks held back while a large bulk arrives: concatenated once, not once per chunk. */
  #parts: Buffer[] = [];
  #partsBytes = 0;
  /** Bytes still missing to finish the bulk being read; 0 when waiting for a header line. */
  #missingBytes = 0;
  /** The multibulk being read: its arguments, how many have arrived, and how many it announced. */
  #args: string[] | undefined;
  #argsRead = 0;
  #argCount = 0;
  #argBytes = 0;
  /** Length of the bulk whose `$` header was read, -1 when the next thing is a header. */
  #bulkLen = -1;
  #failure: CasebookError | undefined;

  constructor(limits: RespLimits = defaultRespLimits) {
    this.#limits = limits;
  }

  /** Bytes this parser holds: unparsed input plus the arguments of a command still arriving. */
  get bufferedBytes(): number {
    return this.#buf.length - this.#pos + this.#partsBytes + this.#argBytes;
  }

  /** True when no partial command is held (nothing buffered, no multibulk in progress). */
  get idle(): boolean {
    return this.bufferedBytes === 0 && this.#args === undefined;
  }

  /** Appends a chunk. Throws CACHE_QUERY_TOO_LARGE when the command being read outgrows maxQueryBytes. */
  feed(chunk: Buffer): void {
    if (this.#failure) throw this.#failure;
    if (chunk.length === 0) return;
    const held = this.#buf.length - this.#pos;
    if (held === 0 && this.#partsBytes === 0) {
      this.#buf = chunk;
      this.#pos = 0;
    } else if (this.#missingBytes > chunk.length + this.#partsBytes) {
      this.#parts.push(chunk);
      this.#partsBytes += chunk.length;
    } else {
      this.#buf = Buffer.concat([this.#buf.subarray(this.#pos), ...this.#parts, chunk]);
      this.#pos = 0;
      this.#parts = [];
      this.#partsBytes = 0;
    }
    if (this.bufferedBytes > this.#limits.maxQueryBytes) {
      this.#failure = cacheErrors.create("CACHE_QUERY_TOO_LARGE", {
        detail: `Protocol error: query buffer limit of ${this.#limits.maxQueryBytes} bytes exceeded`,
      });
      this.#release();
      throw this.#failure;
    }
  }

  /** The next complete command, or undefined until more input arrives. Throws on a protocol error. */
  next(): string[] | undefined {
    if (this.#failure) throw this.#failure;
    try {
      return this.#next();
    } catch (error) {
      this.#failure = error as CasebookError;
      this.#release();
      throw error;
    }
  }

  #release(): void {
    this.#buf = EMPTY;
    this.#pos = 0;
    this.#parts = [];
    this.#partsBytes = 0;
    this.#args = undefined;
    this.#argBytes = 0;
  }

  #next(): string[] | undefined {
    // Each pass either consumes input or returns, so empty commands (*0, blank lines) cannot spin it.
    for (;;) {
      if (this.#args === undefined) {
        if (this.#pos >= this.#buf.length) return undefined;
        if (this.#buf[this.#pos] !== STAR) {
          const inline = this.#readInline();
          if (inline === null) continue;
          return inline;
        }
        const started = this.#readMultibulkHeader();
        if (started === "wait") return undefined;
        if (started === "empty") continue;
      }
      return this.#readBulks();
    }
  }

  /**
   * Index of the CR of the next CRLF-terminated line from #pos, or -1 when it has not arrived.
   * A JS scan: header lines are a few bytes, shorter than the cost of a native indexOf call.
   */
  #lineEnd(tooBig: string): number {
    const buf = this.#buf;
    const last = Math.min(buf.length - 1, this.#pos + this.#limits.maxInlineBytes + 1);
    for (let i = this.#pos; i < last; i++) if (buf[i] === CR) return i;
    if (buf.length - this.#pos > this.#limits.maxInlineBytes) throw protocolError(tooBig);
    return -1;
  }

  /** Reads `*<n>\r\n` and starts collecting its arguments; `empty` for `*0` and `*-1` (Redis skips them). */
  #readMultibulkHeader(): "wait" | "empty" | "started" {
    const end = this.#lineEnd("too big mbulk count string");
    if (end < 0) return "wait";
    const count = parseHeaderInt(this.#buf, this.#pos + 1, end);
    if (Number.isNaN(count) || count > this.#limits.maxMultibulkCount) {
      throw protocolError("invalid multibulk length");
    }
    this.#pos = end + 2;
    if (count <= 0) return "empty";
    this.#args = new Array<string>(Math.min(count, MAX_PREALLOCATED_ARGS));
    this.#argsRead = 0;
    this.#argCount = count;
    this.#bulkLen = -1;
    return "started";
  }

  /** One inline command; null for a blank line, undefined to wait for its line end. */
  #readInline(): string[] | null | undefined {
    const newline = this.#buf.indexOf(LF, this.#pos);
    if (newline < 0) {
      if (this.#buf.length - this.#pos > this.#limits.maxInlineBytes) {
        throw protocolError("too big inline request");
      }
      return undefined;
    }
    if (newline - this.#pos > this.#limits.maxInlineBytes) throw protocolError("too big inline request");
    const end = newline > this.#pos && this.#buf[newline - 1] === CR ? newline - 1 : newline;
    const line = this.#buf.toString("latin1", this.#pos, end);
    this.#pos = newline + 1;
    const args = splitInline(line);
    return args.length === 0 ? null : args;
  }

  /** Reads bulks of the current multibulk; the finished command, or undefined to wait for input. */
  #readBulks(): string[] | undefined {
    const args = this.#args!;
    const buf = this.#buf;
    while (this.#argsRead < this.#argCount) {
      if (this.#bulkLen < 0) {
        if (this.#pos >= buf.length) return this.#wait(0);
        if (buf[this.#pos] !== DOLLAR) {
          throw protocolError(`expected '$', got '${String.fromCharCode(buf[this.#pos]!)}'`);
        }
        const end = this.#lineEnd("too big bulk count string");
        if (end < 0) return this.#wait(0);
        const len = parseHeaderInt(buf, this.#pos + 1, end);
        if (Number.isNaN(len) || len < 0 || len > this.#limits.maxBulkBytes) {
          throw protocolError("invalid bulk length");
        }
        this.#bulkLen = len;
        this.#pos = end + 2;
      }
      const available = buf.length - this.#pos;
      if (available < this.#bulkLen + 2) return this.#wait(this.#bulkLen + 2 - available);
      // The command name comes from the interned few; keys and values are decoded as they come.
      args[this.#argsRead] =
        this.#argsRead === 0 && this.#bulkLen <= MAX_INTERNED_NAME_BYTES
          ? internedName(buf, this.#pos, this.#bulkLen)
          : (buf as Latin1Buffer).latin1Slice(this.#pos, this.#pos + this.#bulkLen);
      this.#argsRead += 1;
      this.#argBytes += this.#bulkLen;
      // Like Redis, the two bytes after a bulk are skipped, not checked: the length already framed it.
      this.#pos += this.#bulkLen + 2;
      this.#bulkLen = -1;
    }
    this.#args = undefined;
    this.#argBytes = 0;
    this.#missingBytes = 0;
    if (this.#pos >= buf.length) {
      this.#buf = EMPTY;
      this.#pos = 0;
    }
    return args;
  }

  #wait(missingBytes: number): undefined {
    this.#missingBytes = missingBytes;
    return undefined;
  }
}

/** Inline arguments, or a protocol error on unbalanced quotes. */
function splitInline(line: string): string[] {
  const args = splitInlineArgs(line);
  if (args === undefined) throw protocolError("unbalanced quotes in request");
  return args;
}
