/**
 * A keyed, reversible permutation of [0, 62^7) (US-06): a balanced Feistel network on 42
 * bits (two 21-bit halves, `ROUNDS` rounds) with cycle-walking. The network permutes
 * [0, 2^42); 62^7 is about 80% of that, so a result at or above 62^7 is fed through the
 * network again until it lands inside — each step stays a bijection, so the walk ends
 * inside the domain and distinct inputs never meet (Black & Rogaway, "Ciphers with
 * arbitrary finite domains", 2002). About 1.25 passes per number on average.
 *
 * Why: the counter hands out consecutive numbers (US-05); Base62 of them would show the
 * creation order and let anyone walk every link (`aaaaaab`, `aaaaaac`, …). Through the
 * permutation consecutive numbers give unrelated codes, the key decides which, and
 * `invert` gives the number back (an operator can tell which block a code came from).
 *
 * The round function is murmur3's 32-bit finalizer over the half XOR a round key: not a
 * cipher an adversary with many pairs cannot break, but enough to hide the order, and fast
 * (the write path computes it per link with no I/O). The key is fixed for a store's life:
 * codes are stored, and a different key would map a later number onto an earlier code.
 *
 * @example
 * const p = new FeistelPermutation(keyBytes);         // 32 bytes
 * const x = p.permute(41);                            // some number in [0, 62^7)
 * p.invert(x);                                        // 41
 */
import { assert } from "@casebook/kit/assert";
import { fmix32 } from "@casebook/kit/fmix32";
import { CODE_SPACE } from "./base62.ts";

export const ROUNDS = 8;
export const KEY_BYTES = ROUNDS * 4;
/** The widest network: 2 × 21 bits, 2^42 ≥ 62^7. */
const MAX_HALF_BITS = 21;
/**
 * Bound on cycle-walking passes: over 62^7 a pass lands outside with probability ~0.2 (at most
 * 3/4 for the smallest domains), so 200 in a row (< 0.75^200 ≈ 1e-25) never happens; reaching
 * it means the network is not a permutation (a bug).
 */
export const MAX_WALK_STEPS = 200;

/** See the module comment. `domain` defaults to 62^7 (a smaller one for exhaustive tests;
 * the network then narrows to the smallest even width covering it). */
export class FeistelPermutation {
  readonly domain: number;
  readonly #keys: Uint32Array;
  readonly #half: number;
  readonly #mask: number;

  constructor(key: Uint8Array, domain: number = CODE_SPACE) {
    if (key.length !== KEY_BYTES)
      throw new RangeError(`permutation key must be ${KEY_BYTES} bytes, got ${key.length}`);
    if (!Number.isSafeInteger(domain) || domain < 4 || domain > 2 ** (2 * MAX_HALF_BITS)) {
      throw new RangeError(`permutation domain ${domain} must be an integer in [4, 2^42]`);
    }
    this.domain = domain;
    // The smallest even-width network covering the domain, so at least 1/4 of it is inside.
    this.#half = 2 ** Math.ceil(Math.ceil(Math.log2(domain)) / 2);
    this.#mask = this.#half - 1;
    const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
    this.#keys = Uint32Array.from({ length: ROUNDS }, (_, i) => view.getUint32(i * 4));
  }

  /** The image of `n` in [0, domain). */
  permute(n: number): number {
    this.#check(n);
    let x = this.#encrypt(n);
    for (let steps = 1; x >= this.domain; steps++) {
      assert(steps < MAX_WALK_STEPS, "feistel: cycle walk did not end; the network is not a permutation");
      x = this.#encrypt(x);
    }
    return x;
  }

  /** The `n` whose image is `x`: `invert(permute(n)) === n`. */
  invert(x: number): number {
    this.#check(x);
    let n = this.#decrypt(x);
    for (let steps = 1; n >= this.domain; steps++) {
      assert(steps < MAX_WALK_STEPS, "feistel: cycle walk did not end; the network is not a permutation");
      n = this.#decrypt(n);
    }
    return n;
  }

  #check(n: number): void {
    assert(
      Number.isSafeInteger(n) && n >= 0 && n < this.domain,
      `feistel: ${n} is outside [0, ${this.domain})`,
    );
  }

  #encrypt(n: number): number {
    let left = Math.floor(n / this.#half);
    let right = n % this.#half;
    for (let i = 0; i < ROUNDS; i++) {
      const next = (left ^ fmix32(right ^ this.#keys[i]!)) & this.#mask;
      left = right;
      right = next;
    }
    return left * this.#half + right;
  }

  #decrypt(x: number): number {
    let left = Math.floor(x / this.#half);
    let right = x % this.#half;
    for (let i = ROUNDS - 1; i >= 0; i--) {
      const previous = (right ^ fmix32(left ^ this.#keys[i]!)) & this.#mask;
      right = left;
      left = previous;
    }
    return left * this.#half + right;
  }
}
