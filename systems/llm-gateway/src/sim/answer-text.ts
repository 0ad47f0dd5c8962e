/**
 * What the simulated model "writes": a deterministic answer for a prompt — the same prompt
 * gives the same words (a semantic cache can be tested against it), another prompt other
 * words — as a list of tokens, each one piece of the simulator's tokenizer (a word with
 * its leading space), so the usage it reports is exactly the tokens it streamed.
 *
 * @example
 * answerTokens("What is 2+2?", 5); // [" lorem", " ipsum", …] (5 tokens, always the same for this prompt)
 */
import { createHash } from "node:crypto";
import { seededRandom } from "@casebook/kit/random";

const WORDS = [
  "the",
  "model",
  "answers",
  "with",
  "tokens",
  "that",
  "arrive",
  "one",
  "by",
  "streaming",
  "gateway",
  "budget",
  "reserve",
  "settle",
  "window",
  "minute",
  "request",
  "response",
  "tenant",
  "route",
  "breaker",
  "fallback",
  "region",
  "smaller",
  "endpoint",
  "cache",
  "prompt",
  "usage",
  "cost",
  "limit",
] as const;

export function answerTokens(prompt: string, count: number): string[] {
  const digest = createHash("sha256").update(prompt).digest("hex").slice(0, 16);
  const rng = seededRandom(digest);
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) tokens.push(` ${WORDS[Math.floor(rng.next() * WORDS.length)]}`);
  return tokens;
}
