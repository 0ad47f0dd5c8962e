/**
 * The simulated provider's prompt (prefix) caching, as OpenAI documents it (LG-13: the
 * provider's feature, not the gateway's): a prompt of at least 1,024 tokens whose prefix
 * was processed recently is partly served from cache, in steps of 128 tokens, and the usage
 * reports it as `prompt_tokens_details.cached_tokens` (billed at a lower price). Prefixes are
 * remembered per model, at most `maxEntries` (oldest forgotten first).
 *
 * @example
 * const cache = new PromptPrefixCache();
 * cache.cachedTokens("gpt-4o", tokens); // 0 the first time
 * cache.cachedTokens("gpt-4o", tokens); // 1024 + 128k for a long enough prompt the second time
 */
import { createHash } from "node:crypto";

export const MIN_CACHED_PROMPT_TOKENS = 1_024;
export const CACHE_STEP_TOKENS = 128;

export class PromptPrefixCache {
  readonly #seen = new Set<string>();
  readonly #maxEntries: number;

  constructor(maxEntries = 50_000) {
    this.#maxEntries = maxEntries;
  }

  /** Tokens of `tokens` (the prompt's pieces) served from cache; remembers this prompt's prefixes. */
  cachedTokens(model: string, tokens: readonly string[]): number {
    if (tokens.length < MIN_CACHED_PROMPT_TOKENS) return 0;
    const hash = createHash("sha256").update(model);
    let cached = 0;
    const keys: string[] = [];
    for (let end = 0; end + CACHE_STEP_TOKENS <= tokens.length; end += CACHE_STEP_TOKENS) {
      hash.update(tokens.slice(end, end + CACHE_STEP_TOKENS).join("\u0000"));
      const blockEnd = end + CACHE_STEP_TOKENS;
      if (blockEnd < MIN_CACHED_PROMPT_TOKENS) continue;
      const key = hash.copy().digest("hex");
      if (this.#seen.has(key)) cached = blockEnd;
      keys.push(key);
    }
    for (const key of keys) this.#remember(key);
    return cached;
  }

  clear(): void {
    this.#seen.clear();
  }

  #remember(key: string): void {
    this.#seen.delete(key);
    this.#seen.add(key);
    if (this.#seen.size > this.#maxEntries) this.#seen.delete(this.#seen.values().next().value as string);
  }
}
