/**
 * The counter scheme end to end (US-05, US-06): a number from the writer's block
 * (counter-blocks.ts) → the keyed permutation (feistel-permutation.ts) → Base62, 7
 * characters (base62.ts). Distinct numbers give distinct codes, so the code needs no
 * lookup before it is stored: zero lookups per code, one counter call per block.
 *
 * @example
 * const codes = new CounterCodes(new BlockAllocator({ counter, limit: CODE_SPACE }), new FeistelPermutation(key));
 * await codes.next();            // "q3ZxP0a" (depends on the key)
 * codes.numberOf("q3ZxP0a");     // the counter value it came from
 */
import { CODE_SPACE, decodeBase62, encodeBase62 } from "./base62.ts";
import type { BlockAllocator } from "./counter-blocks.ts";
import type { FeistelPermutation } from "./feistel-permutation.ts";

export class CounterCodes {
  readonly #blocks: BlockAllocator;
  readonly #permutation: FeistelPermutation;

  constructor(blocks: BlockAllocator, permutation: FeistelPermutation) {
    if (permutation.domain !== CODE_SPACE)
      throw new RangeError("counter codes need the permutation over 62^7");
    this.#blocks = blocks;
    this.#permutation = permutation;
  }

  /** Counter calls and codes so far: lookups per code are 0, counter calls per code 1/blockSize. */
  get stats() {
    return this.#blocks.stats;
  }

  async next(): Promise<string> {
    return encodeBase62(this.#permutation.permute(await this.#blocks.next()));
  }

  /** The counter value a generated code came from; undefined when it is not a 7-character Base62 code. */
  numberOf(code: string): number | undefined {
    const x = decodeBase62(code);
    return x === undefined ? undefined : this.#permutation.invert(x);
  }
}
