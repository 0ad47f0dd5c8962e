/**
 * The compact stored format of a state of one integer and one instant (issue 15): the integer
 * alone, as rate-limiter-flexible stores its counter (Redis keeps an integer inside the
 * object: no allocation), and the instant carried by the key's absolute expiry,
 * `instant + spanMs`, where `spanMs` is fixed by the limit — the fixed window expires at its
 * start + windowMs, a token bucket 2 × a full refill after its last write (RL-06). Written
 * with `SET value PXAT expiry`, read back with `PEXPIRETIME`: exact, since the expiry is
 * absolute and in the engine's own clock. Mirrored by src/store/scripts/includes/stored-timed.lua.
 *
 * Keys in the older formats (a hash of named fields, then the string "a:b") carry the instant
 * themselves and are still read; the script and its twin rewrite them in this format.
 *
 * @example
 * timedToStored(3, 60_000, 60_000); // { kind: "string", value: "3", expiresAtMs: 120000 }
 * readStoredTimed({ kind: "string", value: "3", expiresAtMs: 120_000 }, ["windowStartMs", "count"], "windowStartMs", 60_000); // [3, 60000]
 */
import { readStoredInteger, readStoredPair, type StoredState } from "./algorithm.ts";

export function timedToStored(value: number, instantMs: number, spanMs: number): StoredState {
  return { kind: "string", value: String(value), expiresAtMs: instantMs + spanMs };
}

/**
 * [value, instantMs] of a stored state: the integer and its key's expiry − `spanMs`, or an
 * older format, "a:b" or a hash of `fields` (`fields` in the order the string holds them,
 * `instantField` the one that is the instant). Undefined when nothing is stored; throws when
 * corrupt — an integer without an expiry cannot say its instant.
 */
export function readStoredTimed(
  stored: StoredState,
  fields: readonly [string, string],
  instantField: string,
  spanMs: number,
): [value: number, instantMs: number] | undefined {
  const instantFirst = fields[0] === instantField;
  if (stored.kind === "string" && stored.value !== undefined && !stored.value.includes(":")) {
    const valueField = instantFirst ? fields[1] : fields[0];
    if (stored.expiresAtMs === undefined) {
      throw new Error(`stored ${valueField} has no expiry: ${JSON.stringify(stored.value)}`);
    }
    return [readStoredInteger({ [valueField]: stored.value }, valueField), stored.expiresAtMs - spanMs];
  }
  const pair = readStoredPair(stored, fields);
  if (pair === undefined) return undefined;
  return instantFirst ? [pair[1], pair[0]] : pair;
}
