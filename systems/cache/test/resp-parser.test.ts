/**
 * The RESP parser against what the network does to requests: commands split at any
 * byte, several per chunk, inline and multibulk mixed, and garbage. Property tests
 * (fast-check, fixed seeds) encode random commands, cut the stream at random points
 * and require the same commands back; random bytes must only ever produce a protocol
 * error, with the parser's memory within its bound at every step.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { type RespLimits, RespParser } from "../src/api/resp-parser.ts";
import { cacheErrors } from "../src/errors.ts";

/** A RESP multibulk request, the way client libraries encode one. */
function encodeMultibulk(args: readonly string[]): Buffer {
  const head = `*${args.length}\r\n`;
  const body = args.map((arg) => `$${arg.length}\r\n${arg}\r\n`).join("");
  return Buffer.from(head + body, "latin1");
}

/** Feeds `stream` cut at `cuts` and collects every command, calling next() after each chunk. */
function parseInChunks(parser: RespParser, stream: Buffer, cuts: readonly number[]): string[][] {
  const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
  const commands: string[][] = [];
  let from = 0;
  for (const to of [...points, stream.length]) {
    if (to > from) parser.feed(stream.subarray(from, to));
    from = Math.max(from, to);
    for (let command = parser.next(); command !== undefined; command = parser.next()) commands.push(command);
  }
  return commands;
}

const latin1Arg = fc.string({
  unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});
const inlineArg = fc.string({
  // No "*": a line starting with it is a multibulk header, for Redis too.
  unit: fc.constantFrom(..."abcXYZ019:_-.!@#$%^&()=+/".split("")),
  minLength: 1,
  maxLength: 12,
});
const command = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.array(latin1Arg, { minLength: 1, maxLength: 6 }).map((args) => ({ inline: false, args })),
  },
  {
    weight: 1,
    arbitrary: fc.array(inlineArg, { minLength: 1, maxLength: 5 }).map((args) => ({ inline: true, args })),
  },
);

describe("RespParser", () => {
  test("random commands, encoded and cut at random points, parse back identically", () => {
    fc.assert(
      fc.property(
        fc.array(command, { minLength: 1, maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (commands, cuts) => {
          const stream = Buffer.concat(
            commands.map((c) =>
              c.inline ? Buffer.from(`${c.args.join(" ")}\r\n`, "latin1") : encodeMultibulk(c.args),
            ),
          );
          const parser = new RespParser();
          assert.deepEqual(
            parseInChunks(parser, stream, cuts),
            commands.map((c) => c.args),
          );
          assert.equal(parser.bufferedBytes, 0);
          assert.ok(parser.idle);
        },
      ),
      { numRuns: 400, seed: 7_001 },
    );
  });

  test("random bytes only ever raise a protocol error, and buffered memory stays within its bound", () => {
    const limits: RespLimits = {
      maxBulkBytes: 64,
      maxMultibulkCount: 8,
      maxInlineBytes: 32,
      maxQueryBytes: 256,
    };
    const bytes = fc.uint8Array({ maxLength: 64 });
    // Biased toward RESP's own bytes so the fuzzer reaches deep parser states, not just inline lines.
    const respish = fc
      .array(fc.constantFrom("*", "$", "\r\n", "1", "3", "-", "0", "9", "a", " ", '"', "'", "\n"), {
        maxLength: 40,
      })
      .map((parts) => Buffer.from(parts.join(""), "latin1"));
    fc.assert(
      fc.property(fc.array(fc.oneof(bytes, respish), { minLength: 1, maxLength: 30 }), (chunks) => {
        const parser = new RespParser(limits);
        try {
          for (const chunk of chunks) {
            parser.feed(Buffer.from(chunk));
            assert.ok(parser.bufferedBytes <= limits.maxQueryBytes, `buffered ${parser.bufferedBytes} B`);
            // Bounded: each next() consumes input or returns undefined.
            for (let i = 0; i < 10_000 && parser.next() !== undefined; i++);
            assert.ok(parser.bufferedBytes <= limits.maxQueryBytes, `buffered ${parser.bufferedBytes} B`);
          }
        } catch (error) {
          assert.ok(cacheErrors.is(error), `only protocol errors, got ${String(error)}`);
          assert.match(error.message, /^Protocol error: /);
          assert.equal(parser.bufferedBytes, 0, "a failed parser releases its buffers");
          assert.throws(
            () => parser.next(),
            (e) => cacheErrors.is(e),
            "and stays failed",
          );
        }
      }),
      { numRuns: 1_000, seed: 7_002 },
    );
  });

  test("inline commands: spaces, quotes and escapes as redis-cli and telnet send them", () => {
    const parser = new RespParser();
    parser.feed(Buffer.from('SET "a key" \'it\\\'s\'\r\nGET "\\x41\\n"\nPING\r\n\r\n   \r\n', "latin1"));
    assert.deepEqual(parser.next(), ["SET", "a key", "it's"]);
    assert.deepEqual(parser.next(), ["GET", "A\n"]);
    assert.deepEqual(parser.next(), ["PING"]);
    assert.equal(parser.next(), undefined, "blank lines are skipped, not commands");
  });

  test("empty multibulks (*0, *-1) are skipped like Redis does", () => {
    const parser = new RespParser();
    parser.feed(Buffer.from("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n"));
    assert.deepEqual(parser.next(), ["PING"]);
    assert.equal(parser.next(), undefined);
  });

  test("binary values survive: every byte value, CRLF inside a bulk", () => {
    const value = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)) + "\r\n*1\r\n";
    const parser = new RespParser();
    parser.feed(encodeMultibulk(["SET", "k\r\n", value]));
    assert.deepEqual(parser.next(), ["SET", "k\r\n", value]);
  });

  test("a large bulk arriving in many small chunks is assembled once", () => {
    const value = "v".repeat(1_000_000);
    const stream = encodeMultibulk(["SET", "big", value]);
    const parser = new RespParser();
    let commands = 0;
    for (let from = 0; from < stream.length; from += 1_000) {
      parser.feed(stream.subarray(from, from + 1_000));
      const next = parser.next();
      if (next !== undefined) {
        commands += 1;
        assert.equal(next[2]!.length, value.length);
      }
    }
    assert.equal(commands, 1);
  });

  test("a command with more arguments than the parser preallocates arrives whole, cut anywhere", () => {
    // MSET of 1,500 pairs: 3,001 arguments, beyond the 1,024 slots allocated from the header.
    const args = ["MSET", ...Array.from({ length: 3_000 }, (_, i) => (i % 2 === 0 ? `key:${i}` : `v${i}`))];
    const stream = Buffer.concat([encodeMultibulk(args), encodeMultibulk(["GET", "key:0"])]);
    const parser = new RespParser();
    assert.deepEqual(parseInChunks(parser, stream, [7, 5_000, 5_001, 20_000, stream.length - 3]), [
      args,
      ["GET", "key:0"],
    ]);
    assert.ok(parser.idle);
  });

  const malformed: Array<[string, string]> = [
    ["*abc\r\n", "Protocol error: invalid multibulk length"],
    ["*2000000\r\n", "Protocol error: invalid multibulk length"],
    ["*1\r\n+PING\r\n", "Protocol error: expected '$', got '+'"],
    ["*1\r\n$-5\r\n", "Protocol error: invalid bulk length"],
    ["*1\r\n$abc\r\n", "Protocol error: invalid bulk length"],
    ['GET "unclosed\r\n', "Protocol error: unbalanced quotes in request"],
    ['GET "a"b\r\n', "Protocol error: unbalanced quotes in request"],
  ];
  for (const [input, message] of malformed) {
    test(`malformed ${JSON.stringify(input)} → ${message}`, () => {
      const parser = new RespParser();
      parser.feed(Buffer.from(input, "latin1"));
      assert.throws(
        () => parser.next(),
        (error) => cacheErrors.is(error, "CACHE_PROTOCOL_INVALID") && error.message === message,
      );
    });
  }

  test("unterminated lines are bounded: inline, multibulk and bulk headers", () => {
    const limits: RespLimits = {
      maxBulkBytes: 1_024,
      maxMultibulkCount: 16,
      maxInlineBytes: 100,
      maxQueryBytes: 10_000,
    };
    const cases: Array<[string, string]> = [
      ["x".repeat(101), "Protocol error: too big inline request"],
      [`*${"1".repeat(101)}`, "Protocol error: too big mbulk count string"],
      [`*1\r\n$${"1".repeat(101)}`, "Protocol error: too big bulk count string"],
    ];
    for (const [input, message] of cases) {
      const parser = new RespParser(limits);
      parser.feed(Buffer.from(input));
      assert.throws(
        () => parser.next(),
        (error) => cacheErrors.is(error) && error.message === message,
        message,
      );
    }
  });

  test("a command larger than the query buffer limit is refused while it arrives", () => {
    const limits: RespLimits = {
      maxBulkBytes: 1_000_000,
      maxMultibulkCount: 16,
      maxInlineBytes: 100,
      maxQueryBytes: 10_000,
    };
    const parser = new RespParser(limits);
    parser.feed(Buffer.from("*2\r\n$3\r\nSET\r\n$50000\r\n"));
    assert.equal(parser.next(), undefined);
    assert.throws(
      () => {
        for (let i = 0; i < 20; i++) parser.feed(Buffer.alloc(1_000, 120));
      },
      (error) => cacheErrors.is(error, "CACHE_QUERY_TOO_LARGE"),
    );
    assert.equal(parser.bufferedBytes, 0);
  });
});
