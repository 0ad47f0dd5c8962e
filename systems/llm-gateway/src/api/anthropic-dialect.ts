/**
 * Anthropic's Messages API inbound (`POST /v1/messages`), translated both ways so every
 * mechanism behind the OpenAI route — budgets, the semantic cache, routing, breakers, cost —
 * serves it unchanged: the request becomes an OpenAI chat request (`system` → a system
 * message, content blocks → text, `stop_sequences` → `stop`), and the answer comes back in
 * Anthropic's shapes — a `message` object, or the named SSE events in Anthropic's order
 * (`message_start`, `content_block_start`, `ping`, `content_block_delta`…, `content_block_stop`,
 * `message_delta` with the stop reason and output tokens, `message_stop`), translated event by
 * event as the OpenAI chunks arrive (nothing is buffered), and a failed stream as Anthropic's
 * `event: error`. Text only: tools and images are refused naming the field (400).
 *
 * @example
 * const chat = chatRequestOf(messagesBody); // { model, messages: [{ role: "system", … }, …], max_tokens, stream_options }
 * const sse = anthropicSse(openSseResponse(…), { id, model, inputTokens });
 */
import { dataOf, readChunk } from "../domain/sse-events.ts";
import * as anthropic from "../sim/anthropic-wire.ts";
import type { ChatRequest } from "./chat-schemas.ts";
import type { SseResponse } from "./sse-response.ts";

const textBlock = {
  type: "object",
  required: ["type", "text"],
  additionalProperties: false,
  properties: {
    type: { type: "string", const: "text" },
    text: { type: "string" },
    cache_control: { type: "object" },
  },
} as const;

const content = { type: ["string", "array"], maxItems: 1_000, items: textBlock } as const;

export const messagesRequestSchema = {
  type: "object",
  required: ["model", "max_tokens", "messages"],
  additionalProperties: false,
  properties: {
    model: { type: "string", minLength: 1, maxLength: 200 },
    max_tokens: { type: "integer", minimum: 1 },
    messages: {
      type: "array",
      minItems: 1,
      maxItems: 10_000,
      items: {
        type: "object",
        required: ["role", "content"],
        additionalProperties: false,
        properties: { role: { type: "string", enum: ["user", "assistant"] }, content },
      },
    },
    system: content,
    temperature: { type: "number", minimum: 0, maximum: 1 },
    top_p: { type: "number", minimum: 0, maximum: 1 },
    stop_sequences: { type: "array", maxItems: 4, items: { type: "string", maxLength: 200 } },
    stream: { type: "boolean" },
    metadata: { type: "object", properties: { user_id: { type: ["string", "null"], maxLength: 256 } } },
  },
} as const;

type Content = string | Array<{ type: "text"; text: string }>;

export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: Array<{ role: "user" | "assistant"; content: Content }>;
  system?: Content;
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  stream?: boolean;
  metadata?: { user_id?: string | null };
}

function textOf(value: Content): string {
  return typeof value === "string" ? value : value.map((block) => block.text).join("");
}

/** The OpenAI chat request a Messages request stands for; usage always asked (the stream's `message_delta` needs it). */
export function chatRequestOf(body: MessagesRequest): ChatRequest {
  const messages = [
    ...(body.system === undefined ? [] : [{ role: "system", content: textOf(body.system) }]),
    ...body.messages.map((m) => ({ role: m.role, content: textOf(m.content) })),
  ];
  return {
    model: body.model,
    messages,
    max_tokens: body.max_tokens,
    ...(body.temperature === undefined ? {} : { temperature: body.temperature }),
    ...(body.top_p === undefined ? {} : { top_p: body.top_p }),
    ...(body.stop_sequences === undefined ? {} : { stop: body.stop_sequences }),
    ...(body.stream === true ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

export function stopReasonOf(finishReason: string | undefined): anthropic.StopReason {
  return finishReason === "length" ? "max_tokens" : "end_turn";
}

/** An OpenAI chat.completion as Anthropic's `message`. */
export function messageOf(completion: {
  id?: unknown;
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>;
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown };
  };
}) {
  const choice = completion.choices?.[0];
  const text = typeof choice?.message?.content === "string" ? choice.message.content : "";
  const finish = typeof choice?.finish_reason === "string" ? choice.finish_reason : undefined;
  const head = { id: `msg_${String(completion.id ?? "")}`, model: String(completion.model ?? "") };
  const body = anthropic.message(head, text, stopReasonOf(finish), {
    input: Number(completion.usage?.prompt_tokens ?? 0),
    output: Number(completion.usage?.completion_tokens ?? 0),
  });
  const cached = Number(completion.usage?.prompt_tokens_details?.cached_tokens ?? 0);
  return { ...body, usage: { ...body.usage, cache_read_input_tokens: cached } };
}

/**
 * An SSE response that takes OpenAI chunk events and writes Anthropic's events, one
 * translation per event as it comes: what the relay writes passes through at once.
 */
export function anthropicSse(
  sse: SseResponse,
  head: { id: string; model: string; inputTokens: number },
): SseResponse {
  let started = false;
  let finishReason: string | undefined;
  let outputTokens = 0;
  let model = head.model;
  const start = (): string => {
    if (started) return "";
    started = true;
    return (
      anthropic.messageStart({ id: head.id, model }, head.inputTokens) +
      anthropic.blockStart() +
      anthropic.PING
    );
  };
  /** Anthropic's events for one OpenAI event ("" when it maps to none). */
  const translate = (event: string): string => {
    const info = readChunk(dataOf(event));
    let out = "";
    if (info.kind === "chunk") {
      model = info.model ?? model;
      out += start();
      if (info.text !== "") out += anthropic.textDelta(info.text);
      finishReason = info.finishReason ?? finishReason;
      if (info.usage) outputTokens = info.usage.completionTokens;
    } else if (info.kind === "usage") {
      outputTokens = info.usage.completionTokens;
    } else if (info.kind === "done") {
      out += `${start()}${anthropic.blockStop()}${anthropic.messageDelta(stopReasonOf(finishReason), outputTokens)}${anthropic.MESSAGE_STOP}`;
    } else if (info.kind === "error") {
      const error = info.error as { message?: unknown };
      out += anthropic.namedEvent(
        "error",
        anthropic.anthropicErrorBody(500, String(error?.message ?? "upstream error")),
      );
    }
    return out;
  };
  return {
    async write(event) {
      const out = translate(event);
      if (out !== "") await sse.write(out);
    },
    async writeAll(events) {
      const out = events.map(translate).join("");
      if (out !== "") await sse.write(out);
    },
    fail(error) {
      // Anthropic's SDK throws on an `error` event: the client never takes a cut stream for whole.
      void sse.write(
        anthropic.namedEvent("error", {
          type: "error",
          error: { type: "api_error", message: error.message },
        }),
      );
      sse.end();
    },
    end: (last = []) => {
      const out = last.map(translate).join("");
      sse.end(out === "" ? [] : [out]);
    },
    get closed() {
      return sse.closed;
    },
    signal: sse.signal,
    get keepAlives() {
      return sse.keepAlives;
    },
  };
}
