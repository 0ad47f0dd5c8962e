import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import {
  API_KEY_ID_BYTES,
  API_KEY_SECRET_BYTES,
  apiKeyMatches,
  apiKeyScheme,
  hashApiKey,
} from "../src/api-key.ts";

/** A pinned random source: the bytes a test wants, in order. */
function bytesOf(...chunks: Uint8Array[]) {
  let next = 0;
  return (size: number) => {
    const chunk = chunks[next++]!;
    assert.equal(chunk.length, size);
    return chunk;
  };
}

test("a key is <kind>_<16 hex>_<43 base64url>; its prefix is public; only its sha256 is kept", () => {
  const keys = apiKeyScheme("sk");
  const id = new Uint8Array(API_KEY_ID_BYTES).fill(0xab);
  const secret = new Uint8Array(API_KEY_SECRET_BYTES).fill(0xff);
  const issued = keys.issue(bytesOf(id, secret));
  assert.equal(issued.prefix, "sk_abababababababab");
  assert.equal(issued.key, `sk_abababababababab_${"_".repeat(42)}8`);
  assert.equal(issued.key.length, keys.keyChars);
  assert.equal(issued.hash, hashApiKey(issued.key));
  assert.match(issued.hash, /^[0-9a-f]{64}$/);
  assert.equal(keys.prefixRegex, "^sk_[0-9a-f]{16}$");
  assert.equal(apiKeyScheme("whk").keyChars, 64);
});

test("the stored hash is sha256 of the whole key, as payments and webhooks stored it before (no migration)", () => {
  const key = `whk_0123456789abcdef_${"A".repeat(43)}`;
  // sha256 hex of the UTF-8 key, the algorithm of payments' domain/api-key.ts and webhooks' store-api-key.ts.
  assert.equal(hashApiKey(key), "dbaa8506f1fd4d3524303a72dc6c60fd84af22341b1fdcf39f0b4daf15e23d3e");
  assert.deepEqual(apiKeyScheme("whk").parse(key), { prefix: "whk_0123456789abcdef", hash: hashApiKey(key) });
});

test("parse refuses what cannot be a key of this kind, without hashing it", () => {
  const keys = apiKeyScheme("whk");
  const issued = keys.issue(randomBytes);
  for (const bad of [
    `${issued.key}x`,
    issued.key.slice(1),
    `sk_${issued.key.slice(4)}`,
    "",
    42,
    null,
    undefined,
  ]) {
    assert.equal(keys.parse(bad), undefined, String(bad));
  }
  assert.equal(apiKeyScheme("sk").parse(issued.key), undefined, "another kind's key");
  assert.throws(() => apiKeyScheme("Sk"), RangeError);
  assert.throws(() => apiKeyScheme("toolongkind"), RangeError);
  assert.throws(() => keys.issue(() => new Uint8Array(3)), /wrong number of bytes/);
});

test("apiKeyMatches: equal digests only; a short or non-hex digest is false, never a throw", () => {
  const a = hashApiKey("a");
  assert.ok(apiKeyMatches(a, a));
  assert.ok(!apiKeyMatches(hashApiKey("b"), a));
  assert.ok(!apiKeyMatches("00", a));
  assert.ok(!apiKeyMatches(a, "zz"));
});

test("property: every issued key parses to its prefix and matches its hash; any one-character change does not match", () => {
  const keys = apiKeyScheme("sk");
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: API_KEY_ID_BYTES, maxLength: API_KEY_ID_BYTES }),
      fc.uint8Array({ minLength: API_KEY_SECRET_BYTES, maxLength: API_KEY_SECRET_BYTES }),
      fc.nat(),
      fc.constantFrom(..."0123456789abcdefABCDEF_-x"),
      (id, secret, at, char) => {
        const issued = keys.issue(bytesOf(id, secret));
        const presented = keys.parse(issued.key);
        assert.ok(
          presented && presented.prefix === issued.prefix && apiKeyMatches(presented.hash, issued.hash),
        );
        const i = at % issued.key.length;
        const changed = issued.key.slice(0, i) + char + issued.key.slice(i + 1);
        if (changed === issued.key) return;
        const other = keys.parse(changed);
        assert.ok(other === undefined || !apiKeyMatches(other.hash, issued.hash));
      },
    ),
  );
});
