import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { checkCall, parseScript } from "../../src/redis/script-contract.ts";

const takeToken = `-- take-token: takes one token from a bucket.
-- KEYS[1] bucket hash
-- ARGV[1] capacity
-- ARGV[2] refillPerS
-- returns {allowed, tokens}
local capacity = tonumber(ARGV[1])
return {1, capacity + tonumber(ARGV[2])} -- KEYS[9] in a comment is not a read
`;

function invalid(file: string, lua: string, pattern: RegExp): void {
  assert.throws(
    () => parseScript(file, lua),
    (error) => redisErrors.is(error, "REDIS_SCRIPT_INVALID") && pattern.test(error.message),
  );
}

test("the file name and header give the contract; the SHA1 is the text's", () => {
  const script = parseScript("take-token-1.lua", takeToken);
  assert.equal(script.name, "take-token");
  assert.equal(script.numKeys, 1);
  assert.deepEqual(script.keys, ["bucket hash"]);
  assert.deepEqual(script.args, ["capacity", "refillPerS"]);
  assert.equal(script.minArgs, 2);
  assert.equal(script.maxArgs, 2);
  assert.equal(script.returns, "{allowed, tokens}");
  assert.equal(script.sha1, createHash("sha1").update(takeToken).digest("hex"));
});

test("a file name without the key count is refused", () => {
  invalid("take-token.lua", takeToken, /take-token\.lua: name it <kebab-name>-<numKeys>\.lua/);
  invalid("TakeToken-1.lua", takeToken, /kebab/);
});

test("the number of KEYS lines must equal the key count in the file name", () => {
  invalid("take-token-2.lua", takeToken, /lists 1 KEYS line\(s\) but the file name says 2/);
});

test("a file without a header is refused", () => {
  invalid("bare-0.lua", "return 1\n", /must open with a `--` header/);
});

test("KEYS and ARGV lines must count 1, 2, 3 … in order", () => {
  invalid("gap-1.lua", "-- KEYS[2] x\n-- returns 1\nreturn 1", /expected KEYS\[1\], found KEYS\[2\]/);
  invalid(
    "gap-0.lua",
    "-- ARGV[1] a\n-- ARGV[3] c\n-- returns 1\nreturn ARGV[1]",
    /expected ARGV\[2\], found ARGV\[3\]/,
  );
  invalid("typo-1.lua", "-- KEYS[1]\n-- returns 1\nreturn 1", /cannot read header line "KEYS\[1\]"/);
});

test("exactly one returns line is required", () => {
  invalid("none-0.lua", "-- ARGV[1] a\nreturn ARGV[1]", /exactly one `-- returns …` line, found 0/);
  invalid("two-0.lua", "-- returns a\n-- returns b\nreturn 1", /found 2/);
});

test("a body reading an undeclared KEYS or ARGV slot is refused", () => {
  invalid("reach-1.lua", "-- KEYS[1] k\n-- returns 1\nreturn redis.call('GET', KEYS[2])", /reads KEYS\[2\]/);
  invalid("reach-0.lua", "-- ARGV[1] a\n-- returns 1\nreturn ARGV[1] .. ARGV[2]", /reads ARGV\[2\]/);
});

test("a variadic ARGV[n..] tail takes zero or more arguments and must be the last ARGV line", () => {
  const script = parseScript(
    "tag-1.lua",
    "-- KEYS[1] set\n-- ARGV[1] ttlMs\n-- ARGV[2..] members\n-- returns count\nreturn ARGV[7]",
  );
  assert.equal(script.minArgs, 1);
  assert.equal(script.maxArgs, Infinity);
  assert.deepEqual(checkCall(script, ["s"], [10]), ["10"]);
  assert.deepEqual(checkCall(script, ["s"], [10, "a", "b"]), ["10", "a", "b"]);
  invalid(
    "late-0.lua",
    "-- ARGV[1..] many\n-- ARGV[2] one\n-- returns 1\nreturn 1",
    /variadic line must be last/,
  );
});

test("checkCall refuses a wrong arity or a non-finite number and stringifies like Redis", () => {
  const script = parseScript("take-token-1.lua", takeToken);
  assert.deepEqual(checkCall(script, ["k"], [10, 0.5]), ["10", "0.5"]);
  for (const [keys, args] of [
    [[], [1, 2]],
    [["k"], [1]],
    [["k"], [1, 2, 3]],
    [["k"], [1, Number.POSITIVE_INFINITY]],
  ] as const) {
    assert.throws(
      () => checkCall(script, keys, args),
      (error) => redisErrors.is(error, "REDIS_SCRIPT_ARITY"),
    );
  }
});

test("a -n.lua script takes one or more keys, declared by one KEYS[1..] line", () => {
  const script = parseScript(
    "spend-all-n.lua",
    "-- KEYS[1..] one bucket per limit, all in one slot\n-- ARGV[1..] cost per key\n-- returns 1\nreturn KEYS[3]",
  );
  assert.equal(script.numKeys, Infinity);
  assert.deepEqual(checkCall(script, ["a"], [1]), ["1"]);
  assert.deepEqual(checkCall(script, ["a", "b", "c"], [1, 2, 3]), ["1", "2", "3"]);
  assert.throws(
    () => checkCall(script, [], [1]),
    (error) => redisErrors.is(error, "REDIS_SCRIPT_ARITY"),
  );
  invalid("spend-all-n.lua", "-- KEYS[1] one\n-- returns 1\nreturn 1", /KEYS\[1\.\.\]/);
  invalid("spend-all-2.lua", "-- KEYS[1..] many\n-- returns 1\nreturn 1", /KEYS\[1\.\.\]/);
  invalid("spend-all-n.lua", "-- KEYS[1..] many\n-- KEYS[2] one\n-- returns 1\nreturn 1", /only KEYS line/);
});
