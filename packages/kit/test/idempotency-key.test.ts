import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  IDEMPOTENCY_KEY_MAX_CHARS,
  IDEMPOTENCY_KEY_PATTERN,
  idempotencyKeyProblem,
  isIdempotencyKey,
} from "../src/idempotency-key.ts";

test("the one rule: 1 to 255 visible ASCII characters (0x21-0x7E), Stripe's bound", () => {
  for (const good of ["3f1c2a8e-6b1d-4c55-9d1e-2f3a4b5c6d7e", "!~", "a", "k".repeat(255), 'order#1/{"x"}']) {
    assert.ok(isIdempotencyKey(good), good);
  }
  assert.equal(idempotencyKeyProblem(undefined), "missing");
  assert.equal(idempotencyKeyProblem(""), "missing");
  assert.equal(idempotencyKeyProblem(["a", "b"]), "missing");
  assert.equal(idempotencyKeyProblem("k".repeat(256)), "longer than 255");
  for (const bad of ["has space", "tab\t", "chavé", "nul\u0000", "del\u007f"]) {
    assert.match(String(idempotencyKeyProblem(bad)), /visible ASCII/, JSON.stringify(bad));
  }
  assert.equal(IDEMPOTENCY_KEY_MAX_CHARS, 255);
});

test("property: the schema pattern (as ajv compiles it, flag u) and the function agree on every string", () => {
  const pattern = new RegExp(IDEMPOTENCY_KEY_PATTERN, "u");
  fc.assert(
    fc.property(
      fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary-ascii", maxLength: 300 })),
      (raw) => {
        assert.equal(pattern.test(raw), isIdempotencyKey(raw));
      },
    ),
  );
});
