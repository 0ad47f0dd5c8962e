/** FS-17's estimates from the assumptions of FS-02, by the function the README quotes. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { flashSaleEstimates } from "../src/domain/estimates.ts";

test("FS-17 100,000 attempts for 5,000 tickets: 95% rejected if nothing stands before checkout; at 300 orders/s the room holds 99,700 for 5.6 minutes", () => {
  const e = flashSaleEstimates({ attempts: 100_000, tickets: 5_000, checkoutPerS: 300 });
  assert.equal(e.rejectionRate, 0.95);
  assert.equal(e.queuedAfterFirstS, 99_700);
  assert.equal(e.serveAllMinutes, 5.6);
  assert.equal(e.sellOutS, 16.7, "the tickets go in the first 17 s; the rest wait to hear 'sold out'");
  // "a few hundred": the range the claim spans.
  assert.equal(
    flashSaleEstimates({ attempts: 100_000, tickets: 5_000, checkoutPerS: 200 }).serveAllMinutes,
    8.3,
  );
  assert.equal(
    flashSaleEstimates({ attempts: 100_000, tickets: 5_000, checkoutPerS: 500 }).serveAllMinutes,
    3.3,
  );
});
