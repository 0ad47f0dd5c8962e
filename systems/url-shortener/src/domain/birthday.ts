/**
 * The birthday bound (US-03), as formulas and as a simulation to hold them against.
 * Among n values drawn uniformly from N, the chance that two are equal is
 * 1 − ∏(1 − i/N) for i < n ≈ 1 − e^(−n(n−1)/2N); it passes 1/2 at n ≈ √(2N ln 2) ≈ 1.18√N,
 * and the first repeat is expected at ≈ √(πN/2) ≈ 1.25√N. For 365 birthdays that is 23
 * people; for 62^7 codes about 2.2 million — a millionth of the space.
 *
 * @example
 * collisionProbabilityExact(23, 365);   // 0.507…
 * urlsForCollisionProbability(0.5, CODE_SPACE); // 2_209_…
 */

/** 1 − ∏_{i<n} (1 − i/N): exact, O(n) — for small n (the 23 people). */
export function collisionProbabilityExact(n: number, space: number): number {
  let distinct = 1;
  for (let i = 1; i < n; i++) distinct *= 1 - i / space;
  return 1 - distinct;
}

/** 1 − e^(−n(n−1)/2N): the approximation, accurate when n ≪ N. */
export function collisionProbability(n: number, space: number): number {
  return -Math.expm1((-n * (n - 1)) / (2 * space));
}

/** The n at which the collision probability reaches p: √(2N ln(1/(1−p))). */
export function urlsForCollisionProbability(p: number, space: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`p ${p} must be in (0, 1)`);
  return Math.sqrt(2 * space * -Math.log1p(-p));
}

/** Expected draws up to and including the first repeat: √(πN/2) + 2/3 (Knuth, TAOCP vol. 1 §1.2.11.3). */
export function expectedFirstCollision(space: number): number {
  return Math.sqrt((Math.PI * space) / 2) + 2 / 3;
}

/**
 * Draws values until one repeats, at most `maxDraws`: the 1-based draw of the first repeat,
 * or undefined when none came. Memory grows with the draws (a Set), hence the bound.
 */
export function firstRepeat(draw: (i: number) => number | string, maxDraws: number): number | undefined {
  const seen = new Set<number | string>();
  for (let i = 0; i < maxDraws; i++) {
    const value = draw(i);
    if (seen.has(value)) return i + 1;
    seen.add(value);
  }
  return undefined;
}
