/**
 * OpenAI's chat completions wire format as the real API sends it, for the simulator:
 * a `chat.completion` object, or an SSE stream of `chat.completion.chunk` events —
 * the first delta carries the role, each next one a piece of content, the last an empty
 * delta with `finish_reason`; with `stream_options.include_usage` every chunk has
 * `"usage": null` and one more chunk, with no choices, carries the usage; then
 * `data: [DONE]`. Errors are `{"error":{"message","type","param","code"}}`.
 *
 * @example
 * sseEvent(roleChunk(head)); // 'data: {"id":"chatcmpl-…","object":"chat.completion.chunk",…}\n\n'
 */

export interface CompletionHead {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly includeUsage: boolean;
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** The provider's prompt caching (LG-13): prompt tokens served from its cache. */
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

export type FinishReason = "stop" | "length" | "tool_calls";

export const SYSTEM_FINGERPRINT = "fp_casebook_sim";

export function usageOf(promptTokens: number, completionTokens: number, cachedTokens = 0): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** One SSE event: `data: <json>` and the blank line that ends it. */
export function sseEvent(data: unknown): string {
  return `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";

/** The fields every chunk of one completion repeats. */
function chunkHead(head: CompletionHead) {
  return {
    id: head.id,
    object: "chat.completion.chunk",
    created: head.created,
    model: head.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

function chunk(head: CompletionHead, delta: object, finishReason: FinishReason | null) {
  return {
    ...chunkHead(head),
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(head.includeUsage ? { usage: null } : {}),
  };
}

export function roleChunk(head: CompletionHead) {
  return chunk(head, { role: "assistant", content: "", refusal: null }, null);
}

export function contentChunk(head: CompletionHead, content: string) {
  return chunk(head, { content }, null);
}

/** The first chunk of a tool call: its id, name and the arguments' first fragment. */
export function toolCallStartChunk(head: CompletionHead, call: { id: string; name: string }, args: string) {
  return chunk(
    head,
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { index: 0, id: call.id, type: "function", function: { name: call.name, arguments: args } },
      ],
    },
    null,
  );
}

/** One more fragment of the call's arguments. */
export function toolArgsChunk(head: CompletionHead, args: string) {
  return chunk(head, { tool_calls: [{ index: 0, function: { arguments: args } }] }, null);
}

export function finishChunk(head: CompletionHead, reason: FinishReason) {
  return chunk(head, {}, reason);
}

export function usageChunk(head: CompletionHead, usage: Usage) {
  return { ...chunkHead(head), choices: [], usage };
}

/** A whole answer that is a tool call (`content` null, the call's arguments whole). */
export function toolCallCompletion(
  head: CompletionHead,
  call: { id: string; name: string; arguments: string },
  reason: FinishReason,
  usage: Usage,
) {
  const whole = completion(head, "", reason, usage);
  const [choice] = whole.choices;
  return {
    ...whole,
    choices: [
      {
        ...choice,
        message: {
          role: "assistant",
          content: null,
          refusal: null,
          tool_calls: [
            { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } },
          ],
        },
      },
    ],
  };
}

export function completion(head: CompletionHead, content: string, reason: FinishReason, usage: Usage) {
  return {
    id: head.id,
    object: "chat.completion",
    created: head.created,
    model: head.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null },
        logprobs: null,
        finish_reason: reason,
      },
    ],
    usage,
  };
}

export interface OpenAiError {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
}

export function openAiErrorBody(error: OpenAiError): { error: OpenAiError } {
  return { error };
}
