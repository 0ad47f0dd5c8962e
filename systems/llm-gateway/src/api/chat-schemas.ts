/**
 * The JSON schemas of the OpenAI-compatible routes: the request bodies as OpenAI documents
 * them (every field the SDK may send, each with its type — never coerced — and unknown
 * fields refused naming them), and response views for /openapi.json. Tools and tool calls
 * are passed through as the client wrote them.
 */

const nullable = <T extends { type: string | readonly string[] }>(schema: T) => ({
  ...schema,
  type: [...(Array.isArray(schema.type) ? schema.type : [schema.type]), "null"],
});

const contentPart = {
  type: "object",
  required: ["type"],
  properties: { type: { type: "string", maxLength: 64 }, text: { type: "string" } },
} as const;

/** The roles OpenAI accepts (`function` is its deprecated predecessor of `tool`). */
export const MESSAGE_ROLES = ["system", "developer", "user", "assistant", "tool", "function"] as const;
/** Messages per request at most: a long conversation is hundreds, not millions. */
export const MAX_MESSAGES = 10_000;

const chatMessage = {
  type: "object",
  required: ["role"],
  additionalProperties: false,
  properties: {
    role: { type: "string", enum: MESSAGE_ROLES },
    content: { type: ["string", "array", "null"], maxItems: 1_000, items: contentPart },
    name: { type: "string", maxLength: 256 },
    tool_calls: { type: "array", maxItems: 128, items: { type: "object" } },
    tool_call_id: { type: "string", maxLength: 256 },
    function_call: nullable({ type: "object" }),
    refusal: nullable({ type: "string" }),
    audio: nullable({ type: "object" }),
  },
} as const;

export const chatRequestSchema = {
  type: "object",
  required: ["model", "messages"],
  additionalProperties: false,
  properties: {
    model: { type: "string", minLength: 1, maxLength: 200 },
    messages: { type: "array", minItems: 1, maxItems: MAX_MESSAGES, items: chatMessage },
    max_tokens: nullable({ type: "integer", minimum: 1 }),
    max_completion_tokens: nullable({ type: "integer", minimum: 1 }),
    stream: nullable({ type: "boolean" }),
    stream_options: nullable({
      type: "object",
      additionalProperties: false,
      properties: { include_usage: { type: "boolean" }, include_obfuscation: { type: "boolean" } },
    }),
    temperature: nullable({ type: "number", minimum: 0, maximum: 2 }),
    top_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
    n: nullable({ type: "integer", minimum: 1, maximum: 1, description: "Only 1: one answer per request" }),
    stop: { type: ["string", "array", "null"], maxItems: 4, items: { type: "string" } },
    presence_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
    frequency_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
    logit_bias: nullable({ type: "object" }),
    logprobs: nullable({ type: "boolean" }),
    top_logprobs: nullable({ type: "integer", minimum: 0, maximum: 20 }),
    seed: nullable({ type: "integer" }),
    user: { type: "string", maxLength: 256 },
    tools: { type: "array", maxItems: 128, items: { type: "object" } },
    tool_choice: { type: ["string", "object"] },
    parallel_tool_calls: { type: "boolean" },
    response_format: { type: "object" },
    metadata: nullable({ type: "object" }),
    store: nullable({ type: "boolean" }),
    service_tier: nullable({ type: "string" }),
    reasoning_effort: nullable({ type: "string" }),
    modalities: nullable({ type: "array", items: { type: "string" } }),
    prediction: nullable({ type: "object" }),
    audio: nullable({ type: "object" }),
  },
} as const;

export interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content?: unknown }>;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  [field: string]: unknown;
}

/** A chat completion, or (stream: true) `text/event-stream` of chat.completion.chunk events. */
export const chatResponseView = {
  type: "object",
  description:
    'stream false: the chat.completion object as the provider sent it. stream true: text/event-stream of `data: <chat.completion.chunk>` events, then `data: [DONE]`; a stream that cannot end well ends with `data: {"error":{…}}` instead',
  required: ["id", "object", "choices"],
  additionalProperties: true,
  properties: {
    id: { type: "string" },
    object: { type: "string", const: "chat.completion" },
    created: { type: "integer" },
    model: { type: "string" },
    choices: { type: "array", items: { type: "object", additionalProperties: true } },
    usage: { type: "object", additionalProperties: true },
  },
} as const;

export const modelListView = {
  type: "object",
  required: ["object", "data"],
  properties: {
    object: { type: "string", const: "list" },
    data: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "object", "created", "owned_by"],
        properties: {
          id: { type: "string" },
          object: { type: "string", const: "model" },
          created: { type: "integer" },
          owned_by: { type: "string" },
        },
      },
    },
  },
} as const;
