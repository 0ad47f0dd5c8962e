/**
 * XFetch, probabilistic early expiration (Vattani, Chierichetti & Lowenstein, "Optimal
 * Probabilistic Cache Stampede Prevention", VLDB 2015; CA-20): every reader of a cached
 * value may decide to recompute it before it expires, when
 *
 *     now − δ·β·ln(rand()) ≥ expiry
 *
 * where δ is how long the last recomputation took and β ≥ 0 tunes eagerness (1 is the
 * paper's optimum; > 1 refreshes earlier). −ln(rand) is exponentially distributed, so a
 * reader `gap` ms before expiry refreshes with probability exp(−gap / (δ·β)): negligible
 * long before expiry, rising to 1 at it. With many readers one of them refreshes a little
 * early and the others keep reading the still-valid value: no crowd at the deadline.
 * A slow recomputation (large δ) starts earlier, which is exactly when it is needed.
 *
 * @example
 * shouldRefreshEarly({ nowMs, expiresAtMs, deltaMs: 120, beta: 1, random: systemRandom });
 * earlyRefreshProbability(240, 120, 1); // e^-2 ≈ 0.135: 240 ms before expiry, δ = 120 ms
 */
import type { RandomSource } from "@casebook/kit/random";
import { requireNumber } from "../errors.ts";

/** Bound on β: past this the "early" refresh is simply a shorter TTL. */
export const MAX_XFETCH_BETA = 100;

export interface XFetchInput {
  readonly nowMs: number;
  /** When the value stops being fresh (its logical expiry, not the store's eviction time). */
  readonly expiresAtMs: number;
  /** δ: how long the last recomputation took, in ms. */
  readonly deltaMs: number;
  /** β: eagerness; 0 disables early refresh. */
  readonly beta: number;
  readonly random: RandomSource;
}

/**
 * True when this reader should recompute now. At or past expiry it is always true.
 *
 * @example
 * if (shouldRefreshEarly({ nowMs: clock.nowMs(), expiresAtMs, deltaMs, beta: 1, random })) refresh();
 */
export function shouldRefreshEarly(input: XFetchInput): boolean {
  requireNumber("beta", input.beta, 0, MAX_XFETCH_BETA);
  requireNumber("deltaMs", input.deltaMs, 0, Number.MAX_SAFE_INTEGER);
  if (input.nowMs >= input.expiresAtMs) return true;
  if (input.beta === 0 || input.deltaMs === 0) return false;
  // 1 − next() lies in (0, 1]: ln never sees 0, whose −Infinity would always refresh.
  const draw = 1 - input.random.next();
  return input.nowMs - input.deltaMs * input.beta * Math.log(draw) >= input.expiresAtMs;
}

/**
 * The probability that one reader `gapMs` before expiry refreshes: exp(−gap / (δ·β)).
 *
 * @example
 * earlyRefreshProbability(0, 100, 1);   // 1
 * earlyRefreshProbability(100, 100, 1); // e^-1 ≈ 0.368
 */
export function earlyRefreshProbability(gapMs: number, deltaMs: number, beta: number): number {
  requireNumber("beta", beta, 0, MAX_XFETCH_BETA);
  if (gapMs <= 0) return 1;
  if (beta === 0 || deltaMs <= 0) return 0;
  return Math.exp(-gapMs / (deltaMs * beta));
}
