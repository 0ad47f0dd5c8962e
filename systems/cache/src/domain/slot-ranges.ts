/**
 * Hash slots as ranges, the way Redis Cluster prints and assigns them: `0-5460` in
 * CLUSTER NODES, `[0, 5460]` in CLUSTER SLOTS, `ADDSLOTSRANGE 0 5460`. A node's slots
 * travel in every gossip message as this compact text, so a full table of 16 384
 * slots costs a few bytes, not 16 384 numbers.
 *
 * @example
 * toRanges([0, 1, 2, 7]);          // [[0, 2], [7, 7]]
 * formatRanges([[0, 2], [7, 7]]);  // "0-2,7"
 * parseRanges("0-2,7");            // [[0, 2], [7, 7]]
 * evenSlotRanges(3);               // [[0, 5460], [5461, 10922], [10923, 16383]]
 */
import { SLOT_COUNT } from "@casebook/kit/cluster-slot";

export { SLOT_COUNT };

/** An inclusive range of slots, `[first, last]`. */
export type SlotRange = readonly [number, number];

/** True when `slot` is an integer in 0..16383. */
export function isSlot(slot: number): boolean {
  return Number.isInteger(slot) && slot >= 0 && slot < SLOT_COUNT;
}

/** A slot argument as Redis parses it (`CLUSTER SETSLOT 12a` is an error), or undefined. */
export function parseSlot(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const slot = Number(text);
  return isSlot(slot) ? slot : undefined;
}

/** Sorted slots → inclusive ranges. */
export function toRanges(sortedSlots: Iterable<number>): SlotRange[] {
  const ranges: Array<[number, number]> = [];
  for (const slot of sortedSlots) {
    const last = ranges.at(-1);
    if (last !== undefined && slot === last[1] + 1) last[1] = slot;
    else ranges.push([slot, slot]);
  }
  return ranges;
}

/** Ranges → `0-5460,5462` (a single slot has no dash); "" for none. */
export function formatRanges(ranges: readonly SlotRange[]): string {
  return ranges.map(([first, last]) => (first === last ? `${first}` : `${first}-${last}`)).join(",");
}

/** The inverse of formatRanges; undefined when the text is malformed or out of range. */
export function parseRanges(text: string): SlotRange[] | undefined {
  if (text === "") return [];
  const ranges: SlotRange[] = [];
  for (const part of text.split(",")) {
    const [a, b, extra] = part.split("-");
    if (extra !== undefined || a === undefined) return undefined;
    const first = parseSlot(a);
    const last = b === undefined ? first : parseSlot(b);
    if (first === undefined || last === undefined || last < first) return undefined;
    ranges.push([first, last]);
  }
  return ranges;
}

/** Every slot of `ranges`, in order. */
export function* slotsOf(ranges: readonly SlotRange[]): Generator<number> {
  for (const [first, last] of ranges) for (let slot = first; slot <= last; slot++) yield slot;
}

/**
 * `primaries` contiguous ranges covering all slots, sizes differing by at most one, as
 * redis-cli --cluster create splits them (3 primaries: 0-5460, 5461-10922, 10923-16383).
 */
export function evenSlotRanges(primaries: number): SlotRange[] {
  if (!(Number.isInteger(primaries) && primaries >= 1 && primaries <= SLOT_COUNT)) {
    throw new RangeError(`primaries must be an integer 1..${SLOT_COUNT}, got ${primaries}`);
  }
  const perNode = SLOT_COUNT / primaries;
  const ranges: SlotRange[] = [];
  let first = 0;
  for (let i = 0; i < primaries; i++) {
    const last = i === primaries - 1 ? SLOT_COUNT - 1 : Math.round(perNode * (i + 1)) - 1;
    ranges.push([first, last]);
    first = last + 1;
  }
  return ranges;
}
