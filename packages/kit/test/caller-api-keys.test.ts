/**
 * The `caller=key,…` list `casebook up` hands a callee: written, checked by the callee's pattern
 * (its own kind only, every pair whole), read back.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { apiKeyScheme } from "../src/api-key.ts";
import { callerApiKeysPattern, formatCallerApiKeys, parseCallerApiKeys } from "../src/caller-api-keys.ts";

test("a list of caller keys round-trips and the callee's pattern takes its own kind only", () => {
  const keys = [
    { caller: "flash-sale", key: apiKeyScheme("sk").issue(randomBytes).key },
    { caller: "metrics", key: apiKeyScheme("sk").issue(randomBytes).key },
  ];
  const text = formatCallerApiKeys(keys);
  assert.equal(text, `flash-sale=${keys[0]!.key},metrics=${keys[1]!.key}`);
  assert.ok(callerApiKeysPattern("sk").test(text));
  assert.deepEqual(
    parseCallerApiKeys(text),
    keys.map((k) => ({ ...k, prefix: apiKeyScheme("sk").parse(k.key)!.prefix })),
  );
  // A secret holding '_' (base64url): the prefix to log stops at the id, never inside the secret.
  const underscored = `sk_0123456789abcdef_${"a_".repeat(21)}b`;
  assert.ok(callerApiKeysPattern("sk").test(`x=${underscored}`));
  assert.equal(parseCallerApiKeys(`x=${underscored}`)[0]!.prefix, "sk_0123456789abcdef");
  assert.deepEqual(parseCallerApiKeys(undefined), []);
  const other = `shop=${apiKeyScheme("whk").issue(randomBytes).key}`;
  for (const bad of [other, `${text},`, `=${keys[0]!.key}`, keys[0]!.key, `a b=${keys[0]!.key}`]) {
    assert.equal(callerApiKeysPattern("sk").test(bad), false, bad);
  }
  assert.throws(() => callerApiKeysPattern("Not a kind"), RangeError);
});
