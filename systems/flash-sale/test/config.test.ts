/** FS-02's stated assumptions are the defaults a bare start runs with, and bad settings stop it naming them. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createSaleBody } from "../src/api/sale-schemas.ts";
import { loadSystemConfig } from "../src/config.ts";

test("FS-02 the assumptions are the defaults: 10 minutes to pay, charges at a rate below the processor's few hundred a second, general admission", () => {
  const config = loadSystemConfig({});
  assert.equal(config.holdTtlMs, 10 * 60_000);
  assert.ok(
    config.chargeRatePerS <= 200,
    "at or below payments' default acquirer rate (PAYMENTS_ACQUIRER_RATE_PER_S 200)",
  );
  // General admission: a sale is a count of numbered tickets, not a map of seats to choose from.
  assert.deepEqual(Object.keys(createSaleBody.properties).sort(), [
    "currency",
    "holdTtlMs",
    "id",
    "name",
    "opensAt",
    "perBuyerMax",
    "priceMinor",
    "tickets",
  ]);
  assert.equal(createSaleBody.properties.perBuyerMax.default, 4);
});

test("PAYMENTS_URL without PAYMENTS_API_KEY, or a malformed token key, stops the start naming the setting", () => {
  assert.throws(() => loadSystemConfig({ PAYMENTS_URL: "http://127.0.0.1:8104" }), /PAYMENTS_API_KEY/);
  assert.throws(() => loadSystemConfig({ FLASH_SALE_TOKEN_KEYS: "k1=short" }), /FLASH_SALE_TOKEN_KEYS/);
  assert.deepEqual(
    loadSystemConfig({ FLASH_SALE_TOKEN_KEYS: `new=${"n".repeat(32)},old=${"o".repeat(32)}` }).tokenKeys?.map(
      (k) => k.kid,
    ),
    ["new", "old"],
  );
});

test("FLASH_SALE_RATE_LIMITER_TIMEOUT_MS bounds the per-IP check at 200 ms by default; out of range stops the start naming it", () => {
  assert.equal(loadSystemConfig({}).rateLimiterTimeoutMs, 200);
  assert.equal(loadSystemConfig({ FLASH_SALE_RATE_LIMITER_TIMEOUT_MS: "5s" }).rateLimiterTimeoutMs, 5_000);
  assert.throws(
    () => loadSystemConfig({ FLASH_SALE_RATE_LIMITER_TIMEOUT_MS: "0" }),
    /FLASH_SALE_RATE_LIMITER_TIMEOUT_MS/,
  );
  assert.throws(
    () => loadSystemConfig({ FLASH_SALE_RATE_LIMITER_TIMEOUT_MS: "1m" }),
    /FLASH_SALE_RATE_LIMITER_TIMEOUT_MS/,
  );
});
