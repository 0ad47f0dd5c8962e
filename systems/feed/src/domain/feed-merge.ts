/**
 * The hybrid read's merge (FD-14): the user's pre-built list and the recent ids of each
 * followed celebrity are joined, deduplicated (a repeated fan-out or a post in both sources
 * counts once, FD-17), sorted newest first by Snowflake id (time-ordered, so no timestamp is
 * needed), and cut at the cursor. Pure: the page's content is fetched after, in one batch.
 *
 * @example
 * mergeIds([[5n, 3n], [4n, 3n]], { before: 5n }); // [4n, 3n]
 */
import type { FeedCursor } from "./feed-cursor.ts";

/** Bound on ids one merge handles: the list's cap plus every celebrity's window, with room. */
export const MAX_MERGE_IDS = 100_000;

export function mergeIds(sources: readonly (readonly bigint[])[], cursor?: FeedCursor): bigint[] {
  const seen = new Set<bigint>();
  for (const source of sources) {
    for (const id of source) {
      if (cursor && "before" in cursor && id >= cursor.before) continue;
      if (cursor && "since" in cursor && id <= cursor.since) continue;
      seen.add(id);
    }
  }
  if (seen.size > MAX_MERGE_IDS) throw new RangeError(`merge of ${seen.size} ids exceeds ${MAX_MERGE_IDS}`);
  return [...seen].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
}
