/**
 * LG-11's second check on a hit: the two prompts' words. Every labelled paraphrase passes it;
 * every labelled pair that asks something else by a number, an operator or a negation fails it;
 * and two unrelated long prompts, which the lexical embedder rates above the threshold, fail it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { lexicallyAgree, MIN_WORD_JACCARD, wordJaccard } from "../src/domain/lexical-agreement.ts";
import { cosine, embedText } from "../src/domain/lexical-embedder.ts";
import pairsFile from "./fixtures/cache-pairs.json" with { type: "json" };
import { madeUpPrompt } from "./made-up-prompt.ts";

test("LG-11 every labelled paraphrase agrees in its words; a pair that differs in a number, operator or negation does not", () => {
  for (const pair of pairsFile.pairs) {
    if (pair.same) assert.ok(lexicallyAgree(pair.a, pair.b), `${pair.a} | ${pair.b}`);
  }
  assert.equal(lexicallyAgree("What is 2+2?", "What is 2+3?"), false);
  assert.equal(lexicallyAgree("What is 12*7?", "What is 12+7?"), false);
  assert.equal(lexicallyAgree("Is water wet?", "Is water not wet?"), false);
  assert.equal(wordJaccard("", ""), 1);
});

test("LG-11 two unrelated long prompts the embedder rates alike are refused by their words", () => {
  let alike = 0;
  for (let i = 0; i < 20; i++) {
    const [a, b] = [madeUpPrompt(2 * i + 1, 200), madeUpPrompt(2 * i + 2, 200)];
    if (cosine(embedText(a), embedText(b)) >= 0.9) alike++;
    assert.ok(wordJaccard(a, b) < MIN_WORD_JACCARD, `pair ${i}: ${wordJaccard(a, b).toFixed(2)}`);
    assert.equal(lexicallyAgree(a, b), false);
  }
  // The reason for the check: without it, some of these would be hits at the default threshold.
  assert.ok(alike > 0, "the embedder rates some unrelated long prompts ≥ 0.9 alike");
  // The same long prompt, with different spacing and case, still agrees.
  const long = madeUpPrompt(99, 200);
  assert.ok(lexicallyAgree(long, `  ${long.toUpperCase()} `));
});
