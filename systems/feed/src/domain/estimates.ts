/**
 * The design text's arithmetic as functions (FD-02, FD-05, FD-12), so the numbers of the
 * text are reproduced by tests and the thresholds (FD-08, thresholds.ts) reuse them.
 *
 * @example
 * averagePerS(1e9); // ≈ 11 574 reads/s (FD-02: "about 12 thousand")
 * fanoutSeconds(30e6, 46_000); // ≈ 652 s (FD-05: "about 650 s, 11 minutes")
 */

export const SECONDS_PER_DAY = 86_400;

/** Events per day → average per second. */
export function averagePerS(perDay: number): number {
  return perDay / SECONDS_PER_DAY;
}

/** FD-02: daily feed reads. */
export function dailyReads(dailyActiveUsers: number, opensPerUser: number): number {
  return dailyActiveUsers * opensPerUser;
}

/** FD-02: id copies a day when every post is pushed to every follower. */
export function dailyListWrites(postsPerDay: number, averageFollowers: number): number {
  return postsPerDay * averageFollowers;
}

/** FD-05: seconds of the whole fan-out capacity one post by an author with `followers` takes. */
export function fanoutSeconds(followers: number, listWritesPerS: number): number {
  return followers / listWritesPerS;
}

/** FD-12: bytes the lists take: users × entries × bytes per entry. */
export function listMemoryBytes(users: number, entriesPerUser: number, bytesPerEntry: number): number {
  return users * entriesPerUser * bytesPerEntry;
}
