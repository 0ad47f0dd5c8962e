/**
 * Redis's glob matcher (`stringmatchlen`), for CONFIG GET patterns: `*`, `?`, `[abc]`,
 * `[^a-z]` ranges and `\` escapes. Iterative with backtracking to the last `*`, so a
 * pattern like `*a*a*a*b` costs O(pattern × text), never exponential time.
 *
 * @example
 * globMatch("maxmemory*", "maxmemory-policy"); // true
 * globMatch("lfu-?ecay-time", "LFU-DECAY-TIME", { noCase: true }); // true
 */

function fold(code: number, noCase: boolean): number {
  return noCase && code >= 65 && code <= 90 ? code + 32 : code;
}

/** Matches one `[...]` class at pattern[p] (just after `[`); returns [matched, index after `]`]. */
function matchClass(pattern: string, p: number, code: number, noCase: boolean): [boolean, number] {
  let i = p;
  const negate = pattern[i] === "^";
  if (negate) i += 1;
  let matched = false;
  while (i < pattern.length && pattern[i] !== "]") {
    if (pattern[i] === "\\" && i + 1 < pattern.length) {
      if (fold(pattern.charCodeAt(i + 1), noCase) === code) matched = true;
      i += 2;
    } else if (pattern[i + 1] === "-" && i + 2 < pattern.length && pattern[i + 2] !== "]") {
      let low = fold(pattern.charCodeAt(i), noCase);
      let high = fold(pattern.charCodeAt(i + 2), noCase);
      if (low > high) [low, high] = [high, low];
      if (code >= low && code <= high) matched = true;
      i += 3;
    } else {
      if (fold(pattern.charCodeAt(i), noCase) === code) matched = true;
      i += 1;
    }
  }
  return [negate ? !matched : matched, i + 1];
}

export function globMatch(pattern: string, text: string, options: { noCase?: boolean } = {}): boolean {
  const noCase = options.noCase ?? false;
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  // Each pass advances t, or p, or backtracks with starT advanced: bounded by pattern × text.
  while (t < text.length) {
    const code = fold(text.charCodeAt(t), noCase);
    const token = pattern[p];
    if (token === "*") {
      starP = p;
      starT = t;
      p += 1;
      continue;
    }
    if (token === "?") {
      p += 1;
      t += 1;
      continue;
    }
    if (token === "[") {
      const [ok, after] = matchClass(pattern, p + 1, code, noCase);
      if (ok) {
        p = after;
        t += 1;
        continue;
      }
    } else if (token !== undefined) {
      const literal = token === "\\" && p + 1 < pattern.length ? p + 1 : p;
      if (fold(pattern.charCodeAt(literal), noCase) === code) {
        p = literal + 1;
        t += 1;
        continue;
      }
    }
    if (starP < 0) return false;
    p = starP + 1;
    starT += 1;
    t = starT;
  }
  while (pattern[p] === "*") p += 1;
  return p === pattern.length;
}
