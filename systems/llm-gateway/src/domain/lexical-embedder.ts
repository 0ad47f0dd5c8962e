/**
 * The semantic cache's default embedder (LG-11): deterministic and local, because no
 * offline embedding model can be had here — so it is lexical, not semantic. A text becomes
 * a fixed-length unit vector by feature hashing: word and number tokens, single symbols
 * (`+`, `*`, `?`), adjacent token pairs, and character trigrams of words (which tie
 * `capital` to `capitals`), each hashed to a dimension with a sign and weighted. Numbers,
 * operators and negations weigh most, because a prompt that differs in them asks something
 * else ("2+2" vs "2+3", "is" vs "is not"): a paraphrase that keeps them stays close, one that
 * changes them falls apart. Cosine similarity of two embeddings is their dot product.
 *
 * What it cannot do: see that two prompts with no words in common mean the same thing. Real
 * paraphrase recall needs a model's embeddings (the upstream's `/v1/embeddings`).
 *
 * @example
 * const a = embedText("What is 2+2?"), b = embedText("what is 2 + 2");
 * cosine(a, b); // 1 (same tokens)
 * cosine(embedText("What is 2+2?"), embedText("What is 2+3?")); // well below the threshold
 */

/** Dimensions of an embedding: a few hundred features per prompt spread with few collisions. */
export const EMBEDDING_DIMENSIONS = 96;

const STOPWORDS = new Set([
  "a",
  "an",
  "the",
  "of",
  "to",
  "in",
  "on",
  "for",
  "and",
  "or",
  "is",
  "are",
  "was",
  "be",
  "me",
  "my",
  "you",
  "your",
  "it",
  "this",
  "that",
  "please",
  "can",
  "could",
  "would",
  "tell",
  "what",
  "whats",
  "s",
  "do",
  "does",
  "give",
  "with",
  "about",
  "by",
  "at",
  "as",
]);
const NEGATIONS = new Set(["not", "no", "never", "without", "none", "nor", "isn", "don", "doesn", "t"]);

/** Number words and Roman numerals (from II: a lone "i" is the pronoun) read as the digits they stand for. */
const NUMBER_WORDS: ReadonlyMap<string, string> = new Map(
  [
    [
      "zero",
      "one",
      "two",
      "three",
      "four",
      "five",
      "six",
      "seven",
      "eight",
      "nine",
      "ten",
      "eleven",
      "twelve",
    ],
    ["", "", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"],
  ].flatMap((words) => words.map((word, n) => [word, String(n)] as const).filter(([word]) => word !== "")),
);

const TOKEN = /\p{L}+|\p{N}+(?:[.,]\p{N}+)*|[^\s\p{L}\p{N}]/gu;
const PUNCTUATION = new Set([".", ",", "?", "!", ";", ":", "'", '"', "`", "(", ")", "[", "]"]);

/** FNV-1a, 32 bits: stable across processes and versions (the vectors live in the database). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function add(vector: Float64Array, feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const sign = (fnv1a(`~${feature}`) & 1) === 0 ? 1 : -1;
  vector[hash % vector.length] = (vector[hash % vector.length] as number) + sign * weight;
}

/** The tokens that carry meaning: lower case, stopwords and punctuation out, numbers and symbols kept. */
export function contentTokens(text: string): string[] {
  const tokens = text.normalize("NFKC").toLowerCase().match(TOKEN) ?? [];
  return tokens.filter((t) => !STOPWORDS.has(t) && !PUNCTUATION.has(t)).map((t) => NUMBER_WORDS.get(t) ?? t);
}

function weightOf(token: string): number {
  if (/^\p{N}/u.test(token)) return 4;
  if (NEGATIONS.has(token)) return 4;
  if (!/\p{L}/u.test(token)) return 3; // an operator
  return 1;
}

/** The unit vector of a text (all zeros for a text with no content tokens). */
export function embedText(text: string, dimensions = EMBEDDING_DIMENSIONS): Float32Array {
  const vector = new Float64Array(dimensions);
  const tokens = contentTokens(text);
  tokens.forEach((token, i) => {
    add(vector, `w:${token}`, weightOf(token));
    const next = tokens[i + 1];
    if (next !== undefined) add(vector, `b:${token} ${next}`, Math.max(weightOf(token), weightOf(next)));
    if (/^\p{L}{4,}$/u.test(token)) {
      const padded = ` ${token} `;
      for (let j = 0; j + 3 <= padded.length; j++) add(vector, `c:${padded.slice(j, j + 3)}`, 0.35);
    }
  });
  let norm = 0;
  for (const x of vector) norm += x * x;
  const out = new Float32Array(dimensions);
  if (norm === 0) return out;
  const scale = 1 / Math.sqrt(norm);
  vector.forEach((x, i) => {
    out[i] = x * scale;
  });
  return out;
}

/** Cosine similarity of two unit vectors. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

export interface LabelledPair {
  readonly a: string;
  readonly b: string;
  /** true: the same question (a hit is right); false: a different one (a hit is a wrong answer). */
  readonly same: boolean;
}

export interface ThresholdReport {
  readonly threshold: number;
  readonly falseHits: LabelledPair[];
  readonly falseMisses: LabelledPair[];
}

/** How a threshold does on a labelled set: pairs wrongly hit, pairs wrongly missed. */
export function scoreThreshold(
  pairs: readonly LabelledPair[],
  threshold: number,
  embed: (text: string) => Float32Array = embedText,
): ThresholdReport {
  const falseHits: LabelledPair[] = [];
  const falseMisses: LabelledPair[] = [];
  for (const pair of pairs) {
    const hit = cosine(embed(pair.a), embed(pair.b)) >= threshold;
    if (hit && !pair.same) falseHits.push(pair);
    if (!hit && pair.same) falseMisses.push(pair);
  }
  return { threshold, falseHits, falseMisses };
}

/**
 * The threshold for a labelled set: just above the most similar pair that must NOT hit (a
 * false hit serves one question's answer to another — worse than a miss, which only costs a
 * call), rounded up to 0.01.
 */
export function chooseThreshold(
  pairs: readonly LabelledPair[],
  embed: (text: string) => Float32Array = embedText,
): number {
  let worst = 0;
  for (const pair of pairs) {
    if (!pair.same) worst = Math.max(worst, cosine(embed(pair.a), embed(pair.b)));
  }
  return Math.min(1, Math.floor(worst * 100 + 1) / 100);
}
