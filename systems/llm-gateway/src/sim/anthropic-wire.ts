/**
 * Anthropic's Messages wire format as the real API sends it, for the simulator: a
 * `message` object, or an SSE stream of named events — `message_start` (usage with the
 * input tokens), `content_block_start`, `ping`, one `content_block_delta` per piece of
 * text, `content_block_stop`, `message_delta` (stop reason, output tokens), `message_stop`.
 * Errors are `{"type":"error","error":{"type","message"}}`.
 *
 * @example
 * namedEvent("ping", { type: "ping" }); // 'event: ping\ndata: {"type":"ping"}\n\n'
 */

export type StopReason = "end_turn" | "max_tokens";

export interface MessageHead {
  readonly id: string;
  readonly model: string;
}

/** One named SSE event. */
export function namedEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function messageStart(head: MessageHead, inputTokens: number): string {
  return namedEvent("message_start", {
    type: "message_start",
    message: {
      id: head.id,
      type: "message",
      role: "assistant",
      content: [],
      model: head.model,
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });
}

export function blockStart(): string {
  return namedEvent("content_block_start", {
    type: "content_block_start",
    index: 0,
    content_block: { type: "text", text: "" },
  });
}

export const PING = namedEvent("ping", { type: "ping" });

export function textDelta(text: string): string {
  return namedEvent("content_block_delta", {
    type: "content_block_delta",
    index: 0,
    delta: { type: "text_delta", text },
  });
}

export function blockStop(): string {
  return namedEvent("content_block_stop", { type: "content_block_stop", index: 0 });
}

export function messageDelta(reason: StopReason, outputTokens: number): string {
  return namedEvent("message_delta", {
    type: "message_delta",
    delta: { stop_reason: reason, stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
}

export const MESSAGE_STOP = namedEvent("message_stop", { type: "message_stop" });

export function message(
  head: MessageHead,
  text: string,
  reason: StopReason,
  usage: { input: number; output: number },
) {
  return {
    id: head.id,
    type: "message",
    role: "assistant",
    model: head.model,
    content: [{ type: "text", text }],
    stop_reason: reason,
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  };
}

/** Anthropic's error types by HTTP status. */
export function anthropicErrorType(status: number): string {
  if (status === 400) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529 || status === 503) return "overloaded_error";
  return "api_error";
}

export function anthropicErrorBody(status: number, message: string) {
  return { type: "error", error: { type: anthropicErrorType(status), message } };
}
