/**
 * FD-22's ranked feed: a second stage over the candidates the hybrid read produces (a few
 * hundred ids). Each candidate gets a score — recency decay (a post loses half its weight
 * every `halfLifeMs`), reposts weighted below originals — and the order is then diversified:
 * an author's k-th post on the feed is divided by (1 + k), so one prolific account cannot fill
 * the top. The ranking is computed once per session and stored; pages are positions in it, so
 * the cursor is (session, position) and the id cursor no longer applies — a post arriving
 * mid-session waits for the next session instead of shifting every page.
 *
 * @example
 * rankCandidates([{ id: 3n, authorId: 1n, kind: "post", atMs: 1000 }], { nowMs: 2000, halfLifeMs: 3_600_000 });
 */

export interface Candidate {
  readonly id: bigint;
  readonly authorId: bigint;
  readonly kind: "post" | "repost";
  readonly atMs: number;
}

export interface RankingOptions {
  readonly nowMs: number;
  readonly halfLifeMs: number;
}

/** Bound on candidates one ranking orders (FD-22: "e.g. 200 or 500"). */
export const MAX_CANDIDATES = 500;
const REPOST_WEIGHT = 0.7;

export function rankCandidates(candidates: readonly Candidate[], o: RankingOptions): bigint[] {
  if (candidates.length > MAX_CANDIDATES) throw new RangeError(`at most ${MAX_CANDIDATES} candidates`);
  const base = candidates.map((c) => ({
    c,
    score: (c.kind === "repost" ? REPOST_WEIGHT : 1) * 0.5 ** (Math.max(0, o.nowMs - c.atMs) / o.halfLifeMs),
  }));
  base.sort((a, b) => b.score - a.score || (a.c.id > b.c.id ? -1 : 1));
  const seen = new Map<bigint, number>();
  const diversified = base.map(({ c, score }) => {
    const k = seen.get(c.authorId) ?? 0;
    seen.set(c.authorId, k + 1);
    return { id: c.id, score: score / (1 + k) };
  });
  diversified.sort((a, b) => b.score - a.score || (a.id > b.id ? -1 : 1));
  return diversified.map((d) => d.id);
}
