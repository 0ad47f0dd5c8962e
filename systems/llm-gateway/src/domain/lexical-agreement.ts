/**
 * A second check on a semantic-cache hit (LG-11), on the two prompts' words rather than their
 * embeddings. The lexical embedder's vectors are sums of hashed features: the longer the
 * prompt, the more its vector drifts toward the average of all text, and two unrelated long
 * prompts come out alike (200 made-up words: cosine up to ~0.96, above the 0.9 threshold). A hit
 * is served only when, besides the similarity, the prompts agree on
 *
 * - the decisive tokens — numbers, operators, negations — as multisets (a prompt that differs in
 *   one asks something else, however long it is), and
 * - their content words: Jaccard of the word sets ≥ `MIN_WORD_JACCARD` (a paraphrase shares most
 *   of its words; unrelated text shares few, whatever its length).
 *
 * It can only refuse a hit the similarity allowed, never make one.
 *
 * @example
 * lexicallyAgree("What is 2+2?", "what is 2 + 2"); // true
 * lexicallyAgree("What is 2+2?", "What is 2+3?"); // false: the numbers differ
 */
import { contentTokens } from "./lexical-embedder.ts";

/** Share of content words two prompts must have in common (the labelled paraphrases: 0.5 to 1). */
export const MIN_WORD_JACCARD = 0.5;

const NEGATIONS = new Set(["not", "no", "never", "without", "none", "nor", "isn", "don", "doesn", "t"]);

function isDecisive(token: string): boolean {
  return /^\p{N}/u.test(token) || NEGATIONS.has(token) || !/\p{L}/u.test(token);
}

function decisiveKey(tokens: readonly string[]): string {
  return tokens.filter(isDecisive).sort().join("\u0000");
}

function wordSet(tokens: readonly string[]): Set<string> {
  return new Set(tokens.filter((t) => !isDecisive(t)));
}

/** Jaccard similarity of the two prompts' content-word sets (1 when both have none). */
export function wordJaccard(a: string, b: string): number {
  const [x, y] = [wordSet(contentTokens(a)), wordSet(contentTokens(b))];
  if (x.size === 0 && y.size === 0) return 1;
  let common = 0;
  for (const word of x) if (y.has(word)) common++;
  return common / (x.size + y.size - common);
}

export function lexicallyAgree(a: string, b: string): boolean {
  const [ta, tb] = [contentTokens(a), contentTokens(b)];
  return decisiveKey(ta) === decisiveKey(tb) && wordJaccard(a, b) >= MIN_WORD_JACCARD;
}
