/**
 * The simulator's embeddings (`POST /v1/embeddings`): deterministic, so tests can rely on
 * them, and independent of the gateway's own lexical embedder (another tokenizer, another
 * hash): each of the simulator's tokens, lowercased, adds ±1 to one of `dimensions` buckets
 * (FNV-1a picks the bucket and the sign), and the vector is scaled to length 1, as OpenAI's
 * embeddings are. The same text always gives the same vector; texts sharing most tokens
 * point the same way. Not a language model: paraphrases with other words are far apart.
 *
 * @example
 * simEmbedding("What is 2 + 2?", 96).length; // 96, unit length
 */
import { textTokens } from "./sim-tokenizer.ts";

/** OpenAI's text-embedding-3-small: its vectors' length when the request names none. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 1_536;
/** text-embedding-3-large's length: the most a request may ask. */
export const MAX_EMBEDDING_DIMENSIONS = 3_072;

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

export function simEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const token of textTokens(text)) {
    const word = token.trim().toLowerCase();
    if (word === "") continue;
    const hash = fnv1a(word);
    vector[hash % dimensions]! += hash & 0x8000_0000 ? -1 : 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector.map((_, i) => (i === 0 ? 1 : 0)) : vector.map((v) => v / norm);
}
