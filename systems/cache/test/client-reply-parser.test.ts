/**
 * The client's RESP reply parser and command encoder: every reply type, replies split at
 * every byte, nested arrays resumed across chunks, a big bulk arriving in pieces, the
 * latin1 / status-tagging modes a proxy uses, and protocol errors with their typed code.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { clientErrors } from "../src/client/client-errors.ts";
import { commandBytes, encodeCommand } from "../src/client/command-encoder.ts";
import { ErrorReply, NEED_MORE, type Reply, ReplyParser, StatusReply } from "../src/client/reply-parser.ts";

function parseAll(parser: ReplyParser, bytes: Buffer): Reply[] {
  parser.feed(bytes);
  const replies: Reply[] = [];
  for (let reply = parser.next(); reply !== NEED_MORE; reply = parser.next()) replies.push(reply);
  return replies;
}

const SAMPLE =
  "+OK\r\n-MOVED 3999 127.0.0.1:7002\r\n:42\r\n:-7\r\n$5\r\nhello\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n" +
  "*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n-ERR inner\r\n_\r\n:9007199254740993\r\n";

function expected(): Reply[] {
  return [
    "OK",
    new ErrorReply("MOVED 3999 127.0.0.1:7002"),
    42,
    -7,
    "hello",
    "",
    null,
    null,
    [],
    ["a", [1, null], new ErrorReply("ERR inner")],
    null,
    9007199254740993n,
  ];
}

describe("client reply parser", () => {
  test("reads every RESP2 reply type in one chunk", () => {
    assert.deepEqual(parseAll(new ReplyParser(), Buffer.from(SAMPLE)), expected());
  });

  test("gives the same replies whatever the chunk boundaries (split at every byte)", () => {
    const bytes = Buffer.from(SAMPLE);
    for (let cut = 1; cut < bytes.length; cut++) {
      const parser = new ReplyParser();
      const replies = [...parseAll(parser, bytes.subarray(0, cut)), ...parseAll(parser, bytes.subarray(cut))];
      assert.deepEqual(replies, expected(), `cut at ${cut}`);
      assert.equal(parser.bufferedBytes, 0);
    }
  });

  test("a one-byte-at-a-time feed still yields each reply exactly once", () => {
    const parser = new ReplyParser();
    const replies: Reply[] = [];
    for (const byte of Buffer.from(SAMPLE)) replies.push(...parseAll(parser, Buffer.from([byte])));
    assert.deepEqual(replies, expected());
  });

  test("a 5 MB bulk arriving in 64 KiB chunks is assembled and decoded whole", () => {
    const value = "x".repeat(5_000_000);
    const bytes = Buffer.from(`$${value.length}\r\n${value}\r\n+OK\r\n`);
    const parser = new ReplyParser();
    const replies: Reply[] = [];
    for (let at = 0; at < bytes.length; at += 65_536) {
      replies.push(...parseAll(parser, bytes.subarray(at, at + 65_536)));
    }
    assert.equal(replies.length, 2);
    assert.equal((replies[0] as string).length, 5_000_000);
    assert.equal(replies[1], "OK");
  });

  test("utf8 and latin1 decoding; tagged statuses keep +OK apart from a bulk 'OK'", () => {
    const bytes = Buffer.concat([
      Buffer.from("$2\r\n"),
      Buffer.from([0xc3, 0xa9]),
      Buffer.from("\r\n+OK\r\n$2\r\nOK\r\n"),
    ]);
    assert.deepEqual(parseAll(new ReplyParser(), bytes), ["é", "OK", "OK"]);
    const raw = parseAll(new ReplyParser({ encoding: "latin1", tagStatus: true }), bytes);
    assert.equal(raw[0], "\u00c3\u00a9");
    assert.ok(raw[1] instanceof StatusReply && raw[1].text === "OK");
    assert.equal(raw[2], "OK");
  });

  test("bytes that are not RESP fail with CACHE_CLIENT_PROTOCOL_INVALID", () => {
    for (const bad of ["?what\r\n", ":12x\r\n", "$-5\r\n", "*abc\r\n"]) {
      assert.throws(
        () => parseAll(new ReplyParser(), Buffer.from(bad)),
        (error) => clientErrors.is(error, "CACHE_CLIENT_PROTOCOL_INVALID"),
        bad,
      );
    }
    const deep = "*1\r\n".repeat(40) + ":1\r\n";
    assert.throws(
      () => parseAll(new ReplyParser(), Buffer.from(deep)),
      (error) => clientErrors.is(error, "CACHE_CLIENT_PROTOCOL_INVALID"),
    );
  });
});

describe("command encoder", () => {
  test("encodes arrays of bulk strings with byte lengths in the wire encoding", () => {
    assert.equal(encodeCommand(["GET", "event:42"], "utf8"), "*2\r\n$3\r\nGET\r\n$8\r\nevent:42\r\n");
    assert.equal(encodeCommand(["SET", "k", "é"], "utf8"), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n");
    assert.equal(
      encodeCommand(["SET", "k", "\u00e9"], "latin1"),
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n\u00e9\r\n",
    );
    for (const args of [
      ["GET", "é"],
      ["MGET", "a", "bb", ""],
      ["SET", "k", "v".repeat(1_000)],
    ]) {
      assert.equal(commandBytes(args, "utf8"), Buffer.byteLength(encodeCommand(args, "utf8")));
    }
  });
});

test("every client error code is created with its status, fields and a message", () => {
  for (const [code, spec] of Object.entries(clientErrors.specs)) {
    assert.match(code, /^CACHE_(CLIENT|PROXY)_[A-Z0-9_]+$/);
    const error = clientErrors.create(code as keyof typeof clientErrors.specs, { fields: { address: "x" } });
    assert.equal(error.status, spec.status);
    assert.equal(error.message, spec.message);
    assert.deepEqual(error.fields, { address: "x" });
    assert.ok(clientErrors.is(error, code as keyof typeof clientErrors.specs));
  }
});
