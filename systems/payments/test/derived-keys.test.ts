import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  keyPart,
  paymentAcquirerKey,
  refundAcquirerKey,
  refundLedgerKey,
} from "../src/domain/derived-keys.ts";

const ACQUIRER_KEY = /^[A-Za-z0-9._:-]{1,255}$/;

test("every key the API took before the one rule keeps its derived keys", () => {
  assert.equal(paymentAcquirerKey("mer_1", "order-1.a:b_c"), "mer_1:order-1.a:b_c");
  assert.equal(refundAcquirerKey("mer_1:pm-1", "rf-m1"), "mer_1:pm-1:refund:rf-m1");
  assert.equal(refundLedgerKey(7n, "rf-1"), "pay:7:refund:rf-1");
  assert.equal(keyPart("k".repeat(150)), "k".repeat(150));
});

test("other keys enter as their digest; a key shaped like a digest is hashed too (one-to-one)", () => {
  const digest = keyPart("order/1");
  assert.match(digest, /^sha256\.[0-9a-f]{64}$/);
  assert.notEqual(keyPart(digest), digest);
  assert.match(keyPart("k".repeat(151)), /^sha256\./);
});

test("property: derived acquirer keys are in the acquirer's charset and bound, and distinct keys stay distinct", () => {
  const key = fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 255,
  });
  const merchant = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
  fc.assert(
    fc.property(merchant, key, key, (m, a, b) => {
      const pa = paymentAcquirerKey(m, a);
      assert.match(pa, ACQUIRER_KEY);
      assert.match(refundAcquirerKey(pa, b), ACQUIRER_KEY);
      assert.ok(refundLedgerKey(9_223_372_036_854_775_807n, b).length <= 255);
      if (a !== b) assert.notEqual(pa, paymentAcquirerKey(m, b));
    }),
  );
});
