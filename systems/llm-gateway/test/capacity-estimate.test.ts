/**
 * LG-17 reproduced: the design text's sizing sum, and what it asks of a provider's quota and
 * costs per day, from the same numbers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { capacityEstimate, costPerDayUsd } from "../src/domain/capacity-estimate.ts";
import { parsePriceList } from "../src/domain/pricing.ts";

test("LG-17 500,000 requests/day × 2,000 tokens = 1 billion tokens/day ≈ 11,600 tokens/s; a 3–4× peak ≈ 35,000–46,000 tokens/s; quota and cost from the same sum", (t) => {
  const low = capacityEstimate({ requestsPerDay: 500_000, tokensPerRequest: 2_000, peakFactor: 3 });
  const high = capacityEstimate({ requestsPerDay: 500_000, tokensPerRequest: 2_000, peakFactor: 4 });
  assert.equal(low.tokensPerDay, 1_000_000_000);
  assert.equal(Math.round(low.averageTokensPerS / 100) * 100, 11_600);
  assert.equal(Math.round(low.peakTokensPerS / 1_000) * 1_000, 35_000);
  assert.equal(Math.round(high.peakTokensPerS / 1_000) * 1_000, 46_000);
  // The provider's quota is in tokens per minute: the peak asks 2.08–2.78 M TPM.
  assert.equal(Math.round(low.peakTokensPerMinute / 10_000) / 100, 2.08);
  assert.equal(Math.round(high.peakTokensPerMinute / 10_000) / 100, 2.78);
  const prices = parsePriceList("gpt-4o=2.5/1.25/10,gpt-4o-mini=0.15/0.075/0.6");
  const perDay = (model: string) => costPerDayUsd(low.tokensPerDay, 0.75, prices.get(model)!);
  // 750 M input + 250 M output tokens a day.
  assert.equal(perDay("gpt-4o"), 750 * 2.5 + 250 * 10);
  assert.equal(perDay("gpt-4o-mini"), 750 * 0.15 + 250 * 0.6);
  t.diagnostic(
    `peak ${Math.round(low.peakTokensPerS)}–${Math.round(high.peakTokensPerS)} tokens/s; gpt-4o $${perDay("gpt-4o")}/day, gpt-4o-mini $${perDay("gpt-4o-mini")}/day (75% input)`,
  );
});
