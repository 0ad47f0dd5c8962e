import assert from "node:assert/strict";
import { test } from "node:test";
import { LuaErrorReply, luaToNumber, toRedisReply } from "../../src/redis/lua-reply.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";

test("twin replies convert as Redis converts Lua values", () => {
  // Each expectation was checked against redis-server 7 with EVAL.
  assert.deepEqual(toRedisReply([1, 2.7, -2.7, false, "x", null, 3]), [1, 2, -2, null, "x"]);
  assert.equal(toRedisReply(true), 1);
  assert.equal(toRedisReply(false), null);
  assert.equal(toRedisReply(undefined), null);
  assert.equal(toRedisReply({ ok: "FINE" }), "FINE");
  assert.deepEqual(toRedisReply([1, [2, 3], { ok: "fine" }]), [1, [2, 3], "fine"]);
  assert.ok(Object.is(toRedisReply(-0.5), 0));
});

test("{ err } is the script's error reply; unsupported values are twin bugs", () => {
  assert.throws(
    () => toRedisReply({ err: "SOLD_OUT none left" }),
    (e) => e instanceof LuaErrorReply && e.reply === "SOLD_OUT none left",
  );
  assert.throws(() => toRedisReply([{ err: "x" }]), /top level/);
  assert.throws(() => toRedisReply(Number.NaN), /non-finite/);
  assert.throws(() => toRedisReply({ nope: 1 } as never), /unsupported/);
});

test("luaToNumber follows Lua's tonumber (checked against Redis 7), not JavaScript's Number", () => {
  const cases: [string, number | null][] = [
    [" 42 ", 42],
    ["+5", 5],
    ["5.", 5],
    [".5", 0.5],
    ["-.5e-1", -0.05],
    ["1e+3", 1000],
    ["1e500", Infinity],
    ["0x10", 16],
    ["-0x10", -16],
    ["0X1F", 31],
    ["0x1.8", 1.5],
    ["0x.8", 0.5],
    ["0x1p4", 16],
    ["Infinity", Infinity],
    ["-inf", -Infinity],
    ["", null],
    ["  ", null],
    ["abc", null],
    ["0b1", null],
    ["1_000", null],
    ["0x", null],
    ["1e", null],
    ["infin", null],
  ];
  for (const [text, expected] of cases) assert.equal(luaToNumber(text), expected, JSON.stringify(text));
  assert.ok(Number.isNaN(luaToNumber("NaN")));
  assert.ok(Number.isNaN(luaToNumber("nan(1)")));
  assert.equal(luaToNumber(null), null);
});

test("every redis error code builds, with a status and a message", () => {
  for (const code of Object.keys(redisErrors.specs) as (keyof typeof redisErrors.specs)[]) {
    const error = redisErrors.create(code);
    assert.equal(error.code, code);
    assert.ok(error.status >= 400 && error.message.length > 10, code);
    assert.ok(code.startsWith("REDIS_"), code);
  }
});
