/**
 * Which slots move when a primary joins (CA-03): each existing primary gives away its
 * excess over the new even share, taken from the end of its slots, so that every
 * primary ends with 16384 / N (± 1) slots and only about 1/N of the slots — hence of the
 * keys — move, all of them to the newcomer. Nothing moves between old primaries: the
 * minimum disruption consistent hashing promises, with slots as the ring's arcs.
 *
 * @example
 * planJoin(new Map([["a", range(0, 8191)], ["b", range(8192, 16383)]]), "c");
 * // [{ from: "a", slots: [5462…8191] }, { from: "b", slots: [13653…16383] }] → about a third moves
 */
import { SLOT_COUNT } from "./slot-ranges.ts";

export interface SlotMove {
  readonly from: string;
  readonly slots: readonly number[];
}

export function planJoin(
  slotsByPrimary: ReadonlyMap<string, readonly number[]>,
  newcomer: string,
): SlotMove[] {
  const primaries = [...slotsByPrimary.keys()].filter((id) => id !== newcomer).sort();
  const total = primaries.length + 1;
  const base = Math.floor(SLOT_COUNT / total);
  let extra = SLOT_COUNT % total;
  const moves: SlotMove[] = [];
  for (const id of primaries) {
    // The first `extra` primaries keep one more slot, so the shares sum to exactly 16384.
    const share = base + (extra > 0 ? 1 : 0);
    if (extra > 0) extra -= 1;
    const owned = [...(slotsByPrimary.get(id) ?? [])].sort((a, b) => a - b);
    const excess = owned.length - share;
    if (excess > 0) moves.push({ from: id, slots: owned.slice(owned.length - excess) });
  }
  return moves;
}
