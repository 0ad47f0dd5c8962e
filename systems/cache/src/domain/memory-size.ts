/**
 * Memory sizes as Redis writes them in its config (`maxmemory 256mb`): a number with
 * an optional unit, `k`/`m`/`g` in powers of 1000 and `kb`/`mb`/`gb` in powers of
 * 1024, case-insensitive (Redis's memtoull).
 *
 * @example
 * parseMemorySize("256mb"); // 268435456
 * parseMemorySize("1k");    // 1000
 * parseMemorySize("-1");    // undefined
 */

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  k: 1_000,
  kb: 1_024,
  m: 1_000_000,
  mb: 1_024 ** 2,
  g: 1_000_000_000,
  gb: 1_024 ** 3,
};

const MEMORY_TEXT = /^(\d{1,16})([a-z]{0,2})$/;

/** Bytes, or undefined when `text` is not a memory size. */
export function parseMemorySize(text: string): number | undefined {
  const match = MEMORY_TEXT.exec(text.trim().toLowerCase());
  if (!match) return undefined;
  const unit = UNITS[match[2]!];
  if (unit === undefined) return undefined;
  const bytes = Number(match[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** Human form for INFO's `*_human` fields: "1.50M", "512.00K", "100B" (Redis's bytesToHuman). */
export function humanBytes(bytes: number): string {
  if (bytes < 1_024) return `${bytes}B`;
  if (bytes < 1_024 ** 2) return `${(bytes / 1_024).toFixed(2)}K`;
  if (bytes < 1_024 ** 3) return `${(bytes / 1_024 ** 2).toFixed(2)}M`;
  return `${(bytes / 1_024 ** 3).toFixed(2)}G`;
}
