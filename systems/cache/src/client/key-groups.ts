/**
 * Scatter-gather's first half (CA-07): split a multi-key command's keys into groups that
 * can each ride one command (same slot in a cluster, where even two slots on one node
 * are refused with CROSSSLOT; same node on a ring), remembering every key's position so
 * the gathered replies come back in the caller's order. Groups larger than `maxKeys` are
 * split, so one MGET never carries an unbounded reply. All groups are sent in the same
 * turn of the event loop: auto-pipelining puts the groups bound for one node in one
 * write, so the whole MGET costs one round trip per node, not per group.
 *
 * @example
 * const groups = groupKeys(router, ["{u1}:a", "x", "{u1}:b"], 1_000);
 * // [{ keys: ["{u1}:a", "{u1}:b"], positions: [0, 2] }, { keys: ["x"], positions: [1] }]
 */
import type { KeyRouter } from "./key-router.ts";

export interface KeyGroup {
  readonly keys: string[];
  /** Index of each key in the caller's list. */
  readonly positions: number[];
}

/** Bound on keys per MGET/DEL sent to a node. */
export const DEFAULT_MAX_KEYS_PER_COMMAND = 1_000;

export function groupKeys(
  router: Pick<KeyRouter, "groupOf">,
  keys: readonly string[],
  maxKeys: number,
): KeyGroup[] {
  const open = new Map<string, KeyGroup>();
  const groups: KeyGroup[] = [];
  keys.forEach((key, position) => {
    const id = router.groupOf(key);
    let group = open.get(id);
    if (group === undefined || group.keys.length >= maxKeys) {
      group = { keys: [], positions: [] };
      open.set(id, group);
      groups.push(group);
    }
    group.keys.push(key);
    group.positions.push(position);
  });
  return groups;
}
