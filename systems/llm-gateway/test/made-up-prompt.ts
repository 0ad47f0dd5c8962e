/**
 * Long made-up prompts for the cache's tests: `words` pseudo-words (three syllables each, from
 * a vocabulary of 400) drawn by a seeded generator — unrelated text the lexical embedder
 * still rates alike when long (LG-11's second check exists for them).
 *
 * @example
 * const a = madeUpPrompt(1, 200), b = madeUpPrompt(2, 200);
 */
export function madeUpPrompt(seed: number, words: number): string {
  const syllables = [
    "ka",
    "lo",
    "mi",
    "nu",
    "pe",
    "ra",
    "si",
    "to",
    "ve",
    "zu",
    "ba",
    "de",
    "fo",
    "gi",
    "hu",
    "jo",
  ];
  const vocabulary = Array.from(
    { length: 400 },
    (_, i) => `${syllables[i % 16]}${syllables[Math.floor(i / 16) % 16]}${syllables[(i * 7) % 16]}`,
  );
  let state = seed >>> 0;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    out.push(vocabulary[state % vocabulary.length]!);
  }
  return out.join(" ");
}
