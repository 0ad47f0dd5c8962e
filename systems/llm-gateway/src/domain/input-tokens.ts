/**
 * The gateway's count of a request's input tokens (LG-05/06), with a real tokenizer —
 * `gpt-tokenizer`'s o200k_base (GPT-4o's) — and OpenAI's chat overhead (3 tokens per message,
 * 3 to prime the reply). For a model with another vocabulary it is an estimate: the
 * provider's own count settles the budget afterwards, and an under-count is carried as debt
 * (`token-window.ts`).
 *
 * @example
 * countInputTokens([{ role: "user", content: "Hello, world!" }]); // 4 + 3 + 3 = 10
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_REPLY_PRIMING = 3;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part?.text === "string" ? (part.text as string) : "")).join("");
}

export function countInputTokens(
  messages: readonly { role: string; content?: unknown; name?: unknown }[],
): number {
  let count = TOKENS_REPLY_PRIMING;
  for (const message of messages) {
    count += TOKENS_PER_MESSAGE + countTokens(textOf(message.content)) + countTokens(message.role);
    if (typeof message.name === "string") count += countTokens(message.name) + 1;
  }
  return count;
}
