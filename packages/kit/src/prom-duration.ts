/**
 * Prometheus's duration syntax (`5m`, `1h30m`, `250ms`; units ms s m h d w y, integers only, units
 * in any order as Prometheus 2.42 accepts them) → milliseconds. One parser for the two places
 * that read it: metrics' PromQL (range selectors, `step`, rule `for:`) and the console, which
 * turns a system's declared plots into PromQL and reads a scrape interval back. Stricter than
 * kit's config durations (`parseDurationMs` in config.ts: decimals, bare milliseconds), which are
 * an operator's settings, not PromQL.
 *
 * @example
 * parsePromDurationMs("1h30m"); // 5_400_000
 * parsePromDurationMs("0s");    // 0
 * parsePromDurationMs("1.5s");  // undefined
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  y: 31_536_000_000,
};

/** Milliseconds, or undefined when `text` is not a Prometheus duration. */
export function parsePromDurationMs(text: string): number | undefined {
  if (!/^(\d+(ms|[smhdwy]))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|[smhdwy])/g)) total += Number(n) * UNIT_MS[unit!]!;
  return total;
}
