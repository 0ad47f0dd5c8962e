/**
 * Randomness as an injected dependency, so jitter, sampling and shuffles are
 * reproducible in tests: production passes `systemRandom`, tests pass
 * `seededRandom(seed)` and get the same sequence on every run and every machine.
 *
 * @example
 * const rng = seededRandom("webhooks-test");
 * int(rng, 6);                  // 0..5, the same value on every run
 * pick(rng, ["a", "b", "c"]);   // one element
 * shuffle(rng, [1, 2, 3, 4]);   // the array, shuffled in place
 */
export interface RandomSource {
  /** A uniformly distributed number in [0, 1). */
  next(): number;
}

/** Math.random as a RandomSource: for production, where reproducibility is not wanted. */
export const systemRandom: RandomSource = { next: () => Math.random() };

const TWO_POW_32 = 2 ** 32;
const TWO_POW_53 = 2 ** 53;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * xoshiro128** (Blackman & Vigna): 128 bits of state, period 2^128 − 1, passes
 * BigCrush, and needs only 32-bit integer ops, which JS does fast via `Math.imul`.
 * Not cryptographic: never use it for secrets, tokens or ids an attacker may guess.
 *
 * @example
 * const rng = Xoshiro128.fromState([1, 2, 3, 4]);
 * rng.nextUint32(); // 11520 (the reference implementation's first output)
 */
export class Xoshiro128 implements RandomSource {
  readonly #s = new Uint32Array(4);

  private constructor(state: ArrayLike<number>) {
    this.#s.set(state);
    // An all-zero state is the one fixed point of the generator: it would emit zeros forever.
    if ((this.#s[0]! | this.#s[1]! | this.#s[2]! | this.#s[3]!) === 0) {
      throw new RangeError("xoshiro128** state must not be all zeros");
    }
  }

  /** A generator with this exact 4×32-bit state (for reference vectors and snapshots). */
  static fromState(state: readonly [number, number, number, number]): Xoshiro128 {
    return new Xoshiro128(state);
  }

  /** A generator seeded from a number or a string; equal seeds give equal sequences. */
  static fromSeed(seed: number | string): Xoshiro128 {
    return new Xoshiro128(hashSeed(seedWords(seed)));
  }

  /** The next raw 32-bit output, an integer in [0, 2^32). */
  nextUint32(): number {
    const s = this.#s;
    const s0 = s[0]!;
    const s1 = s[1]!;
    const s2 = s[2]! ^ s0;
    const s3 = s[3]! ^ s1;
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    s[0] = s0 ^ s3;
    s[1] = s1 ^ s2;
    s[2] = s2 ^ (s1 << 9);
    s[3] = rotl(s3, 11);
    return result;
  }

  /**
   * A double in [0, 1) with the full 53 bits of precision (two outputs), so that
   * `int(rng, n)` stays unbiased and fine-grained for any safe integer n.
   */
  next(): number {
    const high = this.nextUint32() >>> 5; // 27 bits
    const low = this.nextUint32() >>> 6; // 26 bits
    return (high * 2 ** 26 + low) / TWO_POW_53;
  }

  /** The current state, to resume the same sequence later with `fromState`. */
  state(): [number, number, number, number] {
    return [this.#s[0]!, this.#s[1]!, this.#s[2]!, this.#s[3]!];
  }
}

/**
 * A seeded, reproducible RandomSource (xoshiro128**).
 *
 * @example
 * const a = seededRandom(42);
 * const b = seededRandom(42);
 * a.next() === b.next(); // true
 */
export function seededRandom(seed: number | string): Xoshiro128 {
  return Xoshiro128.fromSeed(seed);
}

/** Turns a seed into 32-bit words; distinct safe integers and distinct strings give distinct words. */
function seedWords(seed: number | string): number[] {
  if (typeof seed === "number") {
    if (!Number.isFinite(seed)) throw new RangeError(`seed must be finite, got ${seed}`);
    // Tag 0 for integers, 1 for strings, so seed 7 and seed "7" differ.
    if (Number.isSafeInteger(seed)) return [0, seed >>> 0, Math.floor(seed / TWO_POW_32) >>> 0];
    return [1, ...Array.from(String(seed), (ch) => ch.codePointAt(0)!)];
  }
  return [1, ...Array.from(seed, (ch) => ch.codePointAt(0)!)];
}

/**
 * Mixes seed words into 128 bits of state with four independent murmur3-style
 * lanes (the cyrb128 construction), so that nearby seeds (1, 2, 3) give unrelated
 * states rather than nearby ones.
 */
function hashSeed(words: readonly number[]): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (const w of words) {
    h1 = h2 ^ Math.imul(h1 ^ w, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ w, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ w, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ w, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  const state: [number, number, number, number] = [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
  // Astronomically unlikely, but the generator must never start at its zero fixed point.
  if ((state[0] | state[1] | state[2] | state[3]) === 0) state[0] = 1;
  return state;
}

/**
 * A uniform integer in [0, maxExclusive). With a 53-bit source the bias is below
 * maxExclusive / 2^53: invisible for any realistic bound.
 *
 * @example
 * int(seededRandom(1), 10); // 0..9
 */
export function int(rng: RandomSource, maxExclusive: number): number {
  if (!Number.isSafeInteger(maxExclusive) || maxExclusive < 1) {
    throw new RangeError(
      `int(rng, maxExclusive) needs a safe integer maxExclusive >= 1, got ${maxExclusive}`,
    );
  }
  const value = Math.floor(rng.next() * maxExclusive);
  // A source that breaks its [0, 1) contract (returns 1) must not produce maxExclusive.
  return value < maxExclusive ? value : maxExclusive - 1;
}

/**
 * One element of `items`, uniformly.
 *
 * @example
 * pick(seededRandom(1), ["us-east", "eu-west"]);
 */
export function pick<T>(rng: RandomSource, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError("pick(rng, items) needs at least one item");
  return items[int(rng, items.length)]!;
}

/**
 * Shuffles `items` IN PLACE (Fisher–Yates: every permutation equally likely) and
 * returns the same array. Copy first (`shuffle(rng, [...items])`) to keep the original.
 *
 * @example
 * shuffle(seededRandom(1), [1, 2, 3]); // e.g. [3, 1, 2]
 */
export function shuffle<T>(rng: RandomSource, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = int(rng, i + 1);
    const held = items[i]!;
    items[i] = items[j]!;
    items[j] = held;
  }
  return items;
}
