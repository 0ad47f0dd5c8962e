/**
 * Server-Sent Events as the gateway relays them (LG-01, LG-02): bytes from the provider are
 * cut into whole events — an event ends at a blank line — so each one is passed on the
 * moment its last byte arrives, never held for the next; and each event's data is read just
 * enough to know what it is: `[DONE]` (the provider finished: without it a stream is
 * truncated), the usage chunk (what the provider counted), content, or an error.
 *
 * @example
 * const splitter = new SseSplitter({ maxEventChars: 1 << 20 });
 * splitter.push('data: {"choices":[]}\n\nda'); // ['data: {"choices":[]}\n\n'] — "da" waits for its end
 * readChunk(dataOf('data: [DONE]\n\n')); // { kind: "done" }
 */

const EVENT_END = /\r?\n\r?\n/;

/** Cuts a text stream into whole SSE events (each with its terminating blank line). */
export class SseSplitter {
  readonly #maxEventChars: number;
  #pending = "";

  constructor(options: { maxEventChars: number }) {
    this.#maxEventChars = options.maxEventChars;
  }

  /** The events completed by `text`; an unfinished one is kept for the next push. Throws RangeError past the bound. */
  push(text: string): string[] {
    this.#pending += text;
    const events: string[] = [];
    for (;;) {
      const match = EVENT_END.exec(this.#pending);
      if (match === null) break;
      const end = match.index + match[0].length;
      events.push(this.#pending.slice(0, end));
      this.#pending = this.#pending.slice(end);
    }
    if (this.#pending.length > this.#maxEventChars) {
      throw new RangeError(`an SSE event grew past ${this.#maxEventChars} characters without ending`);
    }
    return events;
  }

  /** Characters of an event begun and not ended: non-zero when a stream stops mid-event. */
  get pendingChars(): number {
    return this.#pending.length;
  }
}

/** The data of an event (its `data:` lines joined by newlines), or undefined for a comment-only event. */
export function dataOf(event: string): string | undefined {
  let data: string | undefined;
  for (const line of event.split(/\r?\n/)) {
    if (!line.startsWith("data:")) continue;
    const value = line.slice(line.startsWith("data: ") ? 6 : 5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

export interface ChunkUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens the provider served from its own prompt cache (LG-13), when it says. */
  readonly cachedPromptTokens: number;
}

export type ChunkInfo =
  | { readonly kind: "done" }
  | { readonly kind: "error"; readonly error: unknown }
  | { readonly kind: "usage"; readonly usage: ChunkUsage }
  | {
      readonly kind: "chunk";
      readonly contentDeltas: number;
      readonly usage: ChunkUsage | undefined;
      /** The content of the chunk's deltas (the first choice's, for the semantic cache). */
      readonly text: string;
      readonly finishReason: string | undefined;
      /** True when a delta carries tool calls (an answer the cache must not keep). */
      readonly toolCalls: boolean;
      readonly model: string | undefined;
    }
  | { readonly kind: "other" };

function usageOf(value: unknown): ChunkUsage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const usage = value as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown };
  };
  if (typeof usage.prompt_tokens !== "number" || typeof usage.completion_tokens !== "number")
    return undefined;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    cachedPromptTokens: typeof cached === "number" ? cached : 0,
  };
}

/** What an OpenAI chat completion chunk is, read from its data (see the module comment). */
export function readChunk(data: string | undefined): ChunkInfo {
  if (data === undefined) return { kind: "other" };
  if (data.trim() === "[DONE]") return { kind: "done" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return { kind: "other" };
  }
  if (typeof parsed !== "object" || parsed === null) return { kind: "other" };
  const chunk = parsed as { error?: unknown; choices?: unknown; usage?: unknown; model?: unknown };
  if (chunk.error !== undefined && chunk.error !== null) return { kind: "error", error: chunk.error };
  const usage = usageOf(chunk.usage);
  if (Array.isArray(chunk.choices) && chunk.choices.length === 0 && usage !== undefined) {
    return { kind: "usage", usage };
  }
  if (!Array.isArray(chunk.choices)) return { kind: "other" };
  let contentDeltas = 0;
  let text = "";
  let finishReason: string | undefined;
  let toolCalls = false;
  for (const choice of chunk.choices as Array<{
    delta?: { content?: unknown; tool_calls?: unknown };
    finish_reason?: unknown;
  }>) {
    const content = choice?.delta?.content;
    if (typeof content === "string" && content !== "") {
      contentDeltas += 1;
      text += content;
    }
    if (typeof choice?.finish_reason === "string") finishReason = choice.finish_reason;
    if (choice?.delta?.tool_calls != null) toolCalls = true;
  }
  const model = typeof chunk.model === "string" ? chunk.model : undefined;
  return { kind: "chunk", contentDeltas, usage, text, finishReason, toolCalls, model };
}

/** What a relay that keeps no text needs of an event: its kind, a chunk's content deltas, the usage. */
export type ChunkCounts =
  | { readonly kind: "done" }
  | { readonly kind: "error"; readonly error: unknown }
  | { readonly kind: "usage"; readonly usage: ChunkUsage }
  | { readonly kind: "chunk"; readonly contentDeltas: number }
  | { readonly kind: "other" };

const CONTENT_KEY = '"content"';
const DELTA_OPEN = '"delta":{';
/** The first chunk's delta: the role, then the (empty) content. */
const ROLE_DELTA_OPEN = '"delta":{"role":"assistant",';
const USAGE_KEY = '"usage"';

/**
 * `readChunk`'s kind, content deltas and usage, without parsing the bulk of a stream: a chunk
 * in OpenAI's own layout (`"delta":{"content":"…"}` — each content the first key of its delta,
 * or the second after `"role":"assistant"` in the first chunk — and `"usage":null`) is counted
 * by scanning its data, because a JSON string cannot hold an unescaped quote, so `"content"`
 * and `"usage"` found in the data are keys; `[DONE]` is the end. Anything else — another role,
 * the usage chunk, an error (or the word "error" anywhere), another layout, a space after a
 * colon — is read whole by `readChunk`. For a relay that keeps no text
 * (the cache stores nothing): JSON.parse of every chunk was the relay's largest own cost.
 */
export function countChunk(data: string | undefined): ChunkCounts {
  if (data === "[DONE]") return { kind: "done" };
  if (data === undefined || data.charCodeAt(0) !== 123 /* { */ || data.includes('"error"'))
    return readChunk(data);
  for (let at = data.indexOf(USAGE_KEY); at >= 0; at = data.indexOf(USAGE_KEY, at + USAGE_KEY.length)) {
    if (!data.startsWith(":null", at + USAGE_KEY.length)) return readChunk(data);
  }
  let contentDeltas = 0;
  for (let at = data.indexOf(CONTENT_KEY); at >= 0; at = data.indexOf(CONTENT_KEY, at + CONTENT_KEY.length)) {
    const value = at + CONTENT_KEY.length;
    const inDelta =
      data.startsWith(DELTA_OPEN, at - DELTA_OPEN.length) ||
      data.startsWith(ROLE_DELTA_OPEN, at - ROLE_DELTA_OPEN.length);
    if (!inDelta) return readChunk(data);
    if (data.startsWith(':"', value)) {
      // `:""` is an empty content (not a delta); anything else after the quote is text.
      if (data.charCodeAt(value + 2) !== 34 /* " */) contentDeltas += 1;
    } else if (!data.startsWith(":null", value)) return readChunk(data);
  }
  return { kind: "chunk", contentDeltas };
}
