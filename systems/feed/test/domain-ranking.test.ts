/** FD-22's ranking stage, as pure code. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Candidate, rankCandidates } from "../src/domain/ranking.ts";

const HOUR = 3_600_000;

test("FD-22 the second stage reorders the candidates: recency decays, reposts weigh less, one author cannot fill the top", () => {
  const now = 10 * HOUR;
  const prolific = (n: number): Candidate => ({
    id: BigInt(100 + n),
    authorId: 1n,
    kind: "post",
    atMs: now - n * 60_000,
  });
  const candidates: Candidate[] = [
    ...[0, 1, 2, 3].map(prolific),
    { id: 50n, authorId: 2n, kind: "post", atMs: now - HOUR },
    { id: 60n, authorId: 3n, kind: "repost", atMs: now - 10 * 60_000 },
  ];
  const ranked = rankCandidates(candidates, { nowMs: now, halfLifeMs: 6 * HOUR });
  assert.equal(ranked.length, candidates.length);
  assert.equal(ranked[0], 100n, "the newest post first");
  // Chronological order would put author 1's four posts first; diversity lets the others in.
  assert.ok(ranked.indexOf(60n) < ranked.indexOf(102n));
  assert.ok(ranked.indexOf(50n) < ranked.indexOf(103n));
  assert.notDeepEqual(
    ranked,
    [...candidates].sort((a, b) => (a.id > b.id ? -1 : 1)).map((c) => c.id),
  );
});
