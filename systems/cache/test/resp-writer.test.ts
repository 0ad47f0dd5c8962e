/**
 * The reply encoder: every RESP2/RESP3 reply type byte for byte, a pipelined batch as
 * one buffer, replies crossing slab boundaries and large values in their own buffer,
 * and the guarantee that makes one-write batches safe: bytes handed to a socket are
 * never overwritten by a later batch.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ReplyWriter, SLAB_BYTES } from "../src/api/resp-writer.ts";

function text(parts: readonly Buffer[]): string {
  return Buffer.concat(parts).toString("latin1");
}

describe("ReplyWriter", () => {
  test("RESP2 replies byte for byte, a whole batch in one buffer", () => {
    const writer = new ReplyWriter();
    writer.begin(2);
    writer.simple("OK");
    writer.error("ERR syntax error");
    writer.integer(0);
    writer.integer(-42);
    writer.integer(1_234_567_890_123);
    writer.integer(9_223_372_036_854_775_807n);
    writer.bulk("");
    writer.bulk("v\r\n");
    writer.nullBulk();
    writer.nullArray();
    writer.arrayHeader(2);
    writer.mapHeader(1);
    writer.verbatim("x");
    const parts = writer.finish();
    assert.equal(parts.length, 1);
    assert.equal(
      text(parts),
      "+OK\r\n-ERR syntax error\r\n:0\r\n:-42\r\n:1234567890123\r\n:9223372036854775807\r\n$0\r\n\r\n$3\r\nv\r\n\r\n$-1\r\n*-1\r\n*2\r\n*2\r\n$1\r\nx\r\n",
    );
  });

  test("RESP3 changes nulls, maps, sets and verbatim text", () => {
    const writer = new ReplyWriter();
    writer.begin(3);
    writer.nullBulk();
    writer.nullArray();
    writer.mapHeader(2);
    writer.setHeader(1);
    writer.verbatim("a:b");
    assert.equal(text(writer.finish()), "_\r\n_\r\n%2\r\n~1\r\n=7\r\ntxt:a:b\r\n");
  });

  test("error text never breaks the framing: CR and LF become spaces", () => {
    const writer = new ReplyWriter();
    writer.begin(2);
    writer.error("ERR unknown command 'a\r\nb'");
    assert.equal(text(writer.finish()), "-ERR unknown command 'a b'\r\n");
  });

  test("binary values are written byte for byte (latin1)", () => {
    const value = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
    const writer = new ReplyWriter();
    writer.begin(2);
    writer.bulk(value);
    const bytes = Buffer.concat(writer.finish());
    assert.deepEqual(
      [...bytes.subarray(6, 6 + 256)],
      Array.from({ length: 256 }, (_, i) => i),
    );
  });

  test("a batch larger than a slab spans slabs in order; a large value gets its own buffer", () => {
    const writer = new ReplyWriter();
    writer.begin(2);
    const small = "s".repeat(1_000);
    const count = Math.ceil((SLAB_BYTES * 2) / 1_000);
    for (let i = 0; i < count; i++) writer.bulk(small);
    const big = "B".repeat(SLAB_BYTES);
    writer.bulk(big);
    writer.simple("OK");
    const parts = writer.finish();
    assert.ok(parts.length >= 3);
    assert.ok(
      parts.some((part) => part.length === big.length + 2),
      "the large value's own buffer",
    );
    assert.equal(text(parts), `$1000\r\n${small}\r\n`.repeat(count) + `$${big.length}\r\n${big}\r\n+OK\r\n`);
  });

  test("a finished batch's bytes are never overwritten by the next batches", () => {
    const writer = new ReplyWriter();
    writer.begin(2);
    writer.bulk("first");
    const [first] = writer.finish();
    const snapshot = Buffer.from(first!);
    for (let i = 0; i < 1_000; i++) {
      writer.begin(2);
      writer.bulk("x".repeat(i));
      writer.finish();
    }
    assert.deepEqual(first, snapshot);
  });

  test("an empty batch writes nothing", () => {
    const writer = new ReplyWriter();
    writer.begin(2);
    assert.deepEqual(writer.finish(), []);
  });
});
