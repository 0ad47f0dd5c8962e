/**
 * The seed's back-of-the-envelope numbers (US-02, US-17), as functions so a test reproduces
 * them rather than a README repeating them: 100 million links a month ≈ 38.6 writes/s, 100
 * reads per write ≈ 3,858 reads/s on average, and with an edge serving 95% of requests the
 * origin sees 5% of them.
 *
 * @example
 * writesPerSecond(100e6);            // 38.58…
 * originRequestsPerSecond(3_858, 0.95); // 192.9
 */
import { CODE_LENGTH } from "./base62.ts";

/** A month as the estimate takes it: 30 days. */
export const SECONDS_PER_MONTH = 30 * 86_400;

/** Codes of `length` characters over an alphabet of `alphabet` symbols. */
export function codeSpace(alphabet = 62, length = CODE_LENGTH): number {
  return alphabet ** length;
}

export function writesPerSecond(linksPerMonth: number): number {
  return linksPerMonth / SECONDS_PER_MONTH;
}

export function readsPerSecond(writesPerS: number, readsPerWrite: number): number {
  return writesPerS * readsPerWrite;
}

/** What reaches the origin when the edge answers `edgeHitRatio` of the requests. */
export function originRequestsPerSecond(readsPerS: number, edgeHitRatio: number): number {
  if (!(edgeHitRatio >= 0 && edgeHitRatio <= 1))
    throw new RangeError(`edgeHitRatio ${edgeHitRatio} must be in [0, 1]`);
  return readsPerS * (1 - edgeHitRatio);
}

/** Years until a code space is used up at a creation rate. */
export function yearsToExhaust(space: number, linksPerMonth: number): number {
  return space / linksPerMonth / 12;
}
