/**
 * LG-17's sizing arithmetic, as code so a test reproduces it: requests per day × tokens per
 * request → tokens per day and per second on average, the peak (a factor of the average)
 * that limits are sized for, the tokens per minute that peak asks of a provider's quota, and
 * the cost per day from the same sum and a price table.
 *
 * @example
 * const e = capacityEstimate({ requestsPerDay: 500_000, tokensPerRequest: 2_000, peakFactor: 3 });
 * e.tokensPerDay; // 1_000_000_000
 * Math.round(e.averageTokensPerS); // 11574
 */
import { costNanoUsd, type Price } from "./pricing.ts";

export interface CapacityInput {
  readonly requestsPerDay: number;
  /** Input + output tokens of one request. */
  readonly tokensPerRequest: number;
  /** Peak over average (3–4 in the design text). */
  readonly peakFactor: number;
}

export function capacityEstimate(input: CapacityInput) {
  const tokensPerDay = input.requestsPerDay * input.tokensPerRequest;
  const averageTokensPerS = tokensPerDay / 86_400;
  const peakTokensPerS = averageTokensPerS * input.peakFactor;
  return {
    tokensPerDay,
    averageTokensPerS,
    peakTokensPerS,
    /** What the peak asks of a provider's TPM quota. */
    peakTokensPerMinute: peakTokensPerS * 60,
  };
}

/** Dollars per day of `tokensPerDay` at a price, `inputShare` of them prompt tokens (none from cache). */
export function costPerDayUsd(tokensPerDay: number, inputShare: number, price: Price): number {
  const promptTokens = Math.round(tokensPerDay * inputShare);
  return (
    costNanoUsd(price, {
      promptTokens,
      cachedPromptTokens: 0,
      completionTokens: tokensPerDay - promptTokens,
    }) / 1e9
  );
}
