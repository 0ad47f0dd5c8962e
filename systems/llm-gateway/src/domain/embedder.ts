/**
 * What the semantic cache needs from an embedder (LG-11): a text's vector, of unit length,
 * and an id naming the vector space — vectors of two embedders (or of one at two lengths)
 * are never compared, so the id is part of every cache entry's scope. Two exist: the local
 * lexical embedder (the default: deterministic, no network, words only —
 * `lexical-embedder.ts`) and the upstream's `/v1/embeddings` (`clients/upstream-embedder.ts`).
 *
 * @example
 * const vector = await lexicalEmbedder.embed("What is 2 + 2?"); // Float32Array(96)
 */
import { EMBEDDING_DIMENSIONS, embedText } from "./lexical-embedder.ts";

export interface Embedder {
  /** The vector space: `lexical-96`, `upstream:text-embedding-3-small:96`. */
  readonly id: string;
  readonly dimensions: number;
  embed(text: string): Promise<Float32Array>;
}

export const lexicalEmbedder: Embedder = {
  id: `lexical-${EMBEDDING_DIMENSIONS}`,
  dimensions: EMBEDDING_DIMENSIONS,
  embed: async (text) => embedText(text),
};

/** The vector scaled to length 1 (the store ranks by euclidean distance of unit vectors); undefined for a zero or non-finite vector. */
export function unitVector(values: readonly number[]): Float32Array | undefined {
  let sum = 0;
  for (const v of values) {
    if (!Number.isFinite(v)) return undefined;
    sum += v * v;
  }
  if (sum === 0) return undefined;
  const norm = Math.sqrt(sum);
  return Float32Array.from(values, (v) => v / norm);
}
