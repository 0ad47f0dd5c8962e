/**
 * What a request costs (LG-13, LG-17's "the cost comes from the same sum"): a price table
 * per upstream model in US dollars per million tokens — input, cached input (the provider's
 * own prompt caching bills the tokens it served from cache at a lower price: the gateway
 * accounts for it, it does not implement it) and output — and the cost of a usage in
 * nano-dollars (integers: 1 $/Mtok is 1,000 n$ per token, so no float creeps into a sum).
 * The most a request can cost (its input + the maximum output, at full price) is what a
 * spend budget reserves before the call.
 *
 * @example
 * const prices = parsePriceList("gpt-4o=2.5/1.25/10");
 * costNanoUsd(prices.get("gpt-4o")!, { promptTokens: 2_000, cachedPromptTokens: 1_024, completionTokens: 700 });
 * // 976×2,500 + 1,024×1,250 + 700×10,000 = 10,720,000 n$ = $0.01072
 */

export interface Price {
  /** USD per million prompt tokens not served from the provider's cache. */
  readonly input: number;
  /** USD per million prompt tokens served from the provider's prompt cache. */
  readonly cachedInput: number;
  /** USD per million completion tokens. */
  readonly output: number;
}

export interface TokenUsage {
  readonly promptTokens: number;
  readonly cachedPromptTokens: number;
  readonly completionTokens: number;
}

/** Published list prices (USD / Mtok) of the simulator's default models. */
export const DEFAULT_PRICE_LIST =
  "gpt-4o=2.5/1.25/10,gpt-4o-mini=0.15/0.075/0.6,claude-sonnet-4=3/0.3/15,claude-haiku-4=0.8/0.08/4";

const PRICE = "\\d{1,6}(\\.\\d{1,6})?";
const ENTRY = `[A-Za-z0-9._:/-]{1,100}=${PRICE}/${PRICE}/${PRICE}`;
export const PRICE_LIST_PATTERN = new RegExp(`^(${ENTRY}(,${ENTRY}){0,199})?$`);

export function parsePriceList(list: string): Map<string, Price> {
  if (!PRICE_LIST_PATTERN.test(list))
    throw new RangeError(`"${list}" is not a list of model=input/cached/output`);
  const prices = new Map<string, Price>();
  if (list === "") return prices;
  for (const entry of list.split(",")) {
    const [model, values] = entry.split("=") as [string, string];
    const [input, cachedInput, output] = values.split("/").map(Number) as [number, number, number];
    if (prices.has(model)) throw new RangeError(`model ${model} is priced twice`);
    prices.set(model, { input, cachedInput, output });
  }
  return prices;
}

/** n$ per token for a price in $/Mtok. */
const NANO_PER_TOKEN = 1_000;

/** The cost in nano-dollars, rounded up. */
export function costNanoUsd(price: Price, usage: TokenUsage): number {
  const cached = Math.min(usage.cachedPromptTokens, usage.promptTokens);
  const nano =
    (usage.promptTokens - cached) * price.input * NANO_PER_TOKEN +
    cached * price.cachedInput * NANO_PER_TOKEN +
    usage.completionTokens * price.output * NANO_PER_TOKEN;
  return Math.ceil(nano - 1e-6);
}

/** The most a request can cost: input and the maximum output, nothing from cache. */
export function maxCostNanoUsd(price: Price, inputTokens: number, maxOutputTokens: number): number {
  return costNanoUsd(price, {
    promptTokens: inputTokens,
    cachedPromptTokens: 0,
    completionTokens: maxOutputTokens,
  });
}

/** Nano-dollars as dollars, for people. */
export function usdOf(nanoUsd: number): number {
  return nanoUsd / 1e9;
}
