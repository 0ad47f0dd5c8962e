/**
 * The provider simulator's own token counter, independent of the gateway's tokenizer on
 * purpose: a real provider counts with its model's vocabulary, which a gateway only
 * approximates, and the gap is what the gateway's budgets must survive (LG-06's settle from
 * the provider's usage, and the debt rule). Pieces in the GPT style: a word with its leading
 * space, up to three digits, one punctuation mark, a run of whitespace. The chat overhead
 * follows OpenAI's published recipe: 3 tokens per message, 3 to prime the reply.
 *
 * @example
 * countTextTokens("Hello, world!"); // 4: "Hello" "," " world" "!"
 * countChatTokens([{ role: "user", content: "Hello" }]); // 1 + 3 + 3 = 7
 */

/** One token each: a word (with its leading space), 1–3 digits, one other mark, a whitespace run. */
const PIECE = / ?[\p{L}]+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]|\s+/gu;
/** OpenAI's recipe for chat models: every message costs 3 tokens beyond its text, the reply 3 more. */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_REPLY_PRIMING = 3;

export function textTokens(text: string): string[] {
  return text.match(PIECE) ?? [];
}

export function countTextTokens(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(PIECE)) count += 1;
  return count;
}

/** The text of a message's content: a string, or the text parts of an array of parts. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part?.text === "string" ? (part.text as string) : "")).join("");
}

export interface CountedMessage {
  readonly role?: unknown;
  readonly content?: unknown;
}

export function countChatTokens(messages: readonly CountedMessage[], system = ""): number {
  let count = TOKENS_REPLY_PRIMING + (system === "" ? 0 : TOKENS_PER_MESSAGE + countTextTokens(system));
  for (const message of messages) count += TOKENS_PER_MESSAGE + countTextTokens(contentText(message.content));
  return count;
}
