/**
 * The closest known word to a mistyped one, for "Did you mean …?" hints.
 *
 * @example
 * didYouMean("lsit", ["list", "up", "run", "bench"]); // "list"
 * didYouMean("zzz", ["list", "up"]);                  // undefined: nothing is close
 */
export function didYouMean(input: string, candidates: readonly string[]): string | undefined {
  // A third of the word may be wrong (at least 1, at most 3 edits) before a guess stops helping.
  const maxDistance = Math.min(3, Math.max(1, Math.floor(input.length / 3)));
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    const distance = editDistance(input.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: Levenshtein plus adjacent transpositions ("lsit" → "list" is 1). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        d[(i - 1) * cols + j]! + 1,
        d[i * cols + j - 1]! + 1,
        d[(i - 1) * cols + j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, d[(i - 2) * cols + j - 2]! + 1);
      }
      d[i * cols + j] = value;
    }
  }
  return d[rows * cols - 1]!;
}
