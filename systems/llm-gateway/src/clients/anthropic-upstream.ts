/**
 * An Anthropic Messages destination behind the gateway's OpenAI-shaped core, translated both
 * ways: the OpenAI chat request the router sends becomes a Messages request (`system` out of
 * the messages, `max_tokens` required — the request's or the gateway's bound —, `stop` as
 * `stop_sequences`); a `message` comes back as a `chat.completion`; a stream's named events
 * come back, one by one as they arrive, as OpenAI chunks — `message_start` → the role
 * chunk, each `text_delta` → a content chunk, `message_delta` → the finish reason,
 * `message_stop` → the usage chunk and `data: [DONE]`, an `error` event → an error event.
 * A stream that ends before `message_stop` gets no `[DONE]`: the relay sees a truncation.
 *
 * @example
 * const body = toAnthropicRequest({ model: "claude-haiku-4", messages, stream: true }, 4_096);
 * const chunks = openAiEventsFromAnthropic(upstream.body); // AsyncIterable<Buffer> of OpenAI SSE events
 */
import { dataOf, SseSplitter } from "../domain/sse-events.ts";

/** The Messages API version every request names (Anthropic requires the header). */
export const ANTHROPIC_VERSION = "2023-06-01";

/** A stream's events are bounded as the relay's are. */
const MAX_EVENT_CHARS = 1024 * 1024;

interface OpenAiMessage {
  readonly role: string;
  readonly content?: unknown;
}

interface OpenAiRequest {
  readonly model: string;
  readonly messages: readonly OpenAiMessage[];
  readonly stream?: boolean | null;
  readonly max_tokens?: number | null;
  readonly max_completion_tokens?: number | null;
  readonly temperature?: number | null;
  readonly top_p?: number | null;
  readonly stop?: string | readonly string[] | null;
}

/** A message's text: a string, or its text parts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: { type?: unknown; text?: unknown }) =>
      part?.type === "text" && typeof part.text === "string" ? part.text : "",
    )
    .join("");
}

/** The Messages request for an OpenAI chat request; `defaultMaxTokens` when it names none. */
export function toAnthropicRequest(body: object, defaultMaxTokens: number): object {
  const request = body as OpenAiRequest;
  const system = request.messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .map((m) => textOf(m.content))
    .join("\n\n");
  const messages = request.messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, content: textOf(m.content) }));
  const stop =
    request.stop == null ? undefined : typeof request.stop === "string" ? [request.stop] : request.stop;
  return {
    model: request.model,
    messages,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens,
    ...(system === "" ? {} : { system }),
    ...(request.temperature == null ? {} : { temperature: request.temperature }),
    ...(request.top_p == null ? {} : { top_p: request.top_p }),
    ...(stop === undefined ? {} : { stop_sequences: stop }),
    ...(request.stream === true ? { stream: true } : {}),
  };
}

/** OpenAI's finish reason for Anthropic's stop reason. */
export function finishReasonOf(stopReason: unknown): string {
  if (stopReason === "max_tokens") return "length";
  if (stopReason === "tool_use") return "tool_calls";
  return "stop";
}

interface AnthropicMessage {
  id?: string;
  model?: string;
  content?: Array<{ type?: string; text?: string }>;
  stop_reason?: string;
  usage?: { input_tokens?: number; output_tokens?: number };
}

function usageOf(input: number, output: number) {
  return { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
}

/** A `chat.completion` for a whole Messages answer. */
export function fromAnthropicMessage(body: Buffer, createdS: number): Buffer {
  const message = JSON.parse(body.toString("utf8")) as AnthropicMessage;
  const text = (message.content ?? [])
    .map((block) => (block.type === "text" ? (block.text ?? "") : ""))
    .join("");
  return Buffer.from(
    JSON.stringify({
      id: message.id,
      object: "chat.completion",
      created: createdS,
      model: message.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text },
          finish_reason: finishReasonOf(message.stop_reason),
        },
      ],
      usage: usageOf(message.usage?.input_tokens ?? 0, message.usage?.output_tokens ?? 0),
    }),
  );
}

/** The OpenAI events for one Anthropic event ("" when it has none: `ping`, block starts and stops). */
class StreamTranslator {
  #id = "";
  #model = "";
  #input = 0;
  #output = 0;
  readonly #createdS: number;

  constructor(createdS: number) {
    this.#createdS = createdS;
  }

  #chunk(delta: object, finishReason: string | null): string {
    const chunk = {
      id: this.#id,
      object: "chat.completion.chunk",
      created: this.#createdS,
      model: this.#model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  translate(data: string): string {
    const event = JSON.parse(data) as {
      type?: string;
      message?: AnthropicMessage;
      delta?: { type?: string; text?: string; stop_reason?: string };
      usage?: { output_tokens?: number };
      error?: { type?: string; message?: string };
    };
    switch (event.type) {
      case "message_start":
        this.#id = event.message?.id ?? "";
        this.#model = event.message?.model ?? "";
        this.#input = event.message?.usage?.input_tokens ?? 0;
        return this.#chunk({ role: "assistant", content: "" }, null);
      case "content_block_delta":
        if (event.delta?.type !== "text_delta" || typeof event.delta.text !== "string") return "";
        return this.#chunk({ content: event.delta.text }, null);
      case "message_delta":
        this.#output = event.usage?.output_tokens ?? this.#output;
        return this.#chunk({}, finishReasonOf(event.delta?.stop_reason));
      case "message_stop": {
        const usage = {
          id: this.#id,
          object: "chat.completion.chunk",
          created: this.#createdS,
          model: this.#model,
          choices: [],
          usage: usageOf(this.#input, this.#output),
        };
        return `data: ${JSON.stringify(usage)}\n\ndata: [DONE]\n\n`;
      }
      case "error":
        return `data: ${JSON.stringify({
          error: {
            message: event.error?.message ?? "the provider failed mid-stream",
            type: event.error?.type ?? "api_error",
            param: null,
            code: null,
          },
        })}\n\n`;
      default:
        return "";
    }
  }
}

/** OpenAI SSE events, written as each Anthropic event arrives whole (nothing held past it). */
export async function* openAiEventsFromAnthropic(
  body: AsyncIterable<Buffer>,
  createdS: number,
): AsyncGenerator<Buffer> {
  const splitter = new SseSplitter({ maxEventChars: MAX_EVENT_CHARS });
  const decoder = new TextDecoder();
  const translator = new StreamTranslator(createdS);
  for await (const bytes of body) {
    let out = "";
    for (const event of splitter.push(decoder.decode(bytes, { stream: true }))) {
      const data = dataOf(event);
      if (data !== undefined) out += translator.translate(data);
    }
    if (out !== "") yield Buffer.from(out);
  }
}
