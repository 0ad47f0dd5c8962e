/**
 * The simulated provider's API: OpenAI's `POST /v1/chat/completions` and `GET /v1/models`,
 * Anthropic's `POST /v1/messages`, streaming and not, each paced by the model's profile
 * (`generation.ts`) and failing the way the profile says: 429 with Retry-After, a 500
 * before generating, a stream cut mid-answer (the connection reset, no final event), a
 * pause between two tokens. Prompt and answer tokens are counted with the simulator's own
 * tokenizer and reported as usage.
 *
 * @example
 * registerProviderRoutes(v1, { state, faults, clock, rng });
 */
import type { FaultInjector } from "@casebook/infra/http/simulator-faults";
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { answerTokens } from "./answer-text.ts";
import * as anthropic from "./anthropic-wire.ts";
import { generate } from "./generation.ts";
import * as openai from "./openai-wire.ts";
import { type ModelProfile, type ProviderBehaviour, profileOf } from "./provider-behaviour.ts";
import { providerErrors } from "./provider-errors.ts";
import type { ProviderState, StreamRecord, Wire } from "./provider-state.ts";
import { DEFAULT_EMBEDDING_DIMENSIONS, MAX_EMBEDDING_DIMENSIONS, simEmbedding } from "./sim-embedding.ts";
import { contentText, countChatTokens, textTokens } from "./sim-tokenizer.ts";
import { ARGS_CLOSE, ARGS_OPEN, fragment, toolCallOf } from "./tool-call.ts";

/** Retry-After of a simulated 429: a second, as providers often say. */
export const rateLimitRetryAfterMs = 1_000;
/** A generation runs minutes at most: the route's own handler timeout. */
const generationTimeoutMs = 600_000;

export interface ProviderRouteOptions {
  readonly state: ProviderState;
  readonly faults: FaultInjector<ProviderBehaviour>;
  readonly clock: Clock;
  readonly rng: RandomSource;
}

interface ChatBody {
  model: string;
  messages: Array<{ role: string; content?: unknown }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: Array<{ type?: string; function?: { name?: string } }>;
  tool_choice?: string | { type?: string; function?: { name?: string } };
}

interface MessagesBody {
  model: string;
  messages: Array<{ role: string; content?: unknown }>;
  system?: unknown;
  max_tokens: number;
  stream?: boolean;
}

const message = {
  type: "object",
  required: ["role"],
  properties: { role: { type: "string" } },
} as const;

const chatSchema = {
  type: "object",
  required: ["model", "messages"],
  properties: {
    model: { type: "string", minLength: 1 },
    messages: { type: "array", minItems: 1, items: message },
    max_tokens: { type: ["integer", "null"], minimum: 1 },
    max_completion_tokens: { type: ["integer", "null"], minimum: 1 },
    stream: { type: ["boolean", "null"] },
    stream_options: {
      type: ["object", "null"],
      properties: { include_usage: { type: "boolean" } },
    },
    tools: { type: ["array", "null"], maxItems: 128, items: { type: "object" } },
    tool_choice: { type: ["string", "object", "null"] },
  },
} as const;

const messagesSchema = {
  type: "object",
  required: ["model", "messages", "max_tokens"],
  properties: {
    model: { type: "string", minLength: 1 },
    messages: { type: "array", minItems: 1, items: message },
    max_tokens: { type: "integer", minimum: 1 },
    stream: { type: "boolean" },
  },
} as const;

const anyObject = { type: "object", additionalProperties: true } as const;
const tags = ["provider"];

/** What every generation shares once the request is admitted. */
interface Admitted {
  readonly profile: ModelProfile;
  readonly record: StreamRecord;
  readonly tokens: readonly string[];
  readonly truncated: boolean;
}

function admit(
  options: ProviderRouteOptions,
  wire: Wire,
  body: { model: string; stream?: boolean | null | undefined },
  prompt: { text: string; tokens: number },
  maxTokens: number | undefined,
): Admitted {
  const profile = profileOf(options.faults.behaviour, body.model);
  if (profile === undefined) {
    throw providerErrors.create("PROVIDER_MODEL_NOT_FOUND", {
      detail: `The model \`${body.model}\` does not exist or you do not have access to it.`,
      fields: { param: "model", openAiCode: "model_not_found" },
    });
  }
  if (maxTokens !== undefined && maxTokens > profile.maxOutputTokens) {
    throw providerErrors.create("PROVIDER_MAX_TOKENS_TOO_LARGE", {
      detail: `max_tokens is too large: ${maxTokens}. This model supports at most ${profile.maxOutputTokens} completion tokens.`,
      fields: { param: "max_tokens", openAiCode: "invalid_value" },
    });
  }
  // A draw only for a knob that is on: turning one on does not shift what the other sees.
  if (profile.rateLimitRate > 0 && options.rng.next() < profile.rateLimitRate) {
    options.state.count("rateLimited");
    throw providerErrors.create("PROVIDER_RATE_LIMITED", {
      fields: { retryAfterMs: rateLimitRetryAfterMs, openAiCode: "rate_limit_exceeded" },
    });
  }
  if (profile.errorRate > 0 && options.rng.next() < profile.errorRate) {
    options.state.count("modelErrors");
    throw providerErrors.create("PROVIDER_SERVER_ERROR", { fields: { openAiCode: "server_error" } });
  }
  const length = Math.min(profile.answerTokens, maxTokens ?? profile.maxOutputTokens);
  const record = options.state.open({
    id: options.state.nextId(wire === "openai" ? "chatcmpl-sim" : "msg_sim"),
    model: body.model,
    wire,
    stream: body.stream === true,
    promptTokens: prompt.tokens,
  });
  return {
    profile,
    record,
    tokens: answerTokens(prompt.text, length),
    truncated: length < profile.answerTokens,
  };
}

/** Connection state of one reply: closed when the client went away before the end. */
function watchClose(reply: FastifyReply) {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return {
    isClosed: () => controller.signal.aborted,
    sleep: (ms: number) =>
      new Promise<void>((resolve, reject) => {
        const signal = controller.signal;
        if (signal.aborted) return reject(signal.reason);
        const onAbort = () => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        // The listener goes with its timer: one per token left on the signal made each add walk
        // all the earlier ones (a 100-token answer: 5,050 steps; 18% of the simulator's CPU).
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        }, ms);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
  };
}

/** Takes the reply over and writes the SSE head at once: the client knows the stream started. */
function openSse(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  reply.raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-request-id": request.id,
  });
  reply.raw.flushHeaders();
}

/**
 * A cut: the connection closed mid-answer without the stream's end (no final event, no last
 * chunk of the chunked encoding) — what a provider crash looks like. The bytes already
 * written still arrive (FIN after them, not a reset that would drop them).
 */
function cut(reply: FastifyReply): void {
  const socket = reply.raw.socket;
  if (socket === null) return;
  socket.end(() => socket.destroy());
}

/** A non-streamed answer that did not finish: cut (connection reset) or nobody left to answer. */
function abandon(reply: FastifyReply, end: "cut" | "client-closed"): FastifyReply {
  reply.hijack();
  if (end === "cut") cut(reply);
  return reply;
}

async function run(
  options: ProviderRouteOptions,
  admitted: Admitted,
  reply: FastifyReply,
  emit: (t: string) => void,
  first?: () => void,
) {
  const watch = watchClose(reply);
  const outcome = await generate({
    profile: admitted.profile,
    tokens: admitted.tokens,
    clock: options.clock,
    isClosed: watch.isClosed,
    sleep: watch.sleep,
    emit: (token) => {
      options.state.generated(admitted.record);
      emit(token);
    },
    ...(first ? { first } : {}),
  });
  options.state.close(admitted.record, outcome.end);
  return outcome;
}

function registerChat(v1: FastifyInstance, options: ProviderRouteOptions): void {
  v1.post<{ Body: ChatBody }>(
    "/v1/chat/completions",
    {
      config: { handlerTimeoutMs: generationTimeoutMs },
      schema: {
        summary: "OpenAI chat completions (stream or not), paced by the model's profile",
        tags,
        body: chatSchema,
        response: { 200: anyObject },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const promptText = body.messages.map((m) => contentText(m.content)).join("\n");
      const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
      const prompt = { text: promptText, tokens: countChatTokens(body.messages) };
      const admitted = admit(options, "openai", body, prompt, maxTokens);
      const cached = options.state.promptCache.cachedTokens(body.model, textTokens(promptText));
      const head: openai.CompletionHead = {
        id: admitted.record.id,
        created: Math.floor(options.clock.nowMs() / 1000),
        model: body.model,
        includeUsage: body.stream === true && body.stream_options?.include_usage === true,
      };
      const call = toolCallOf(body, admitted.record.id);
      const reason: openai.FinishReason = admitted.truncated ? "length" : call ? "tool_calls" : "stop";
      if (body.stream !== true) {
        const text: string[] = [];
        const outcome = await run(options, admitted, reply, (token) => text.push(token));
        if (outcome.end !== "done") return abandon(reply, outcome.end);
        const usage = openai.usageOf(prompt.tokens, outcome.generated, cached);
        if (call) {
          const args = ARGS_OPEN + text.map(fragment).join("") + ARGS_CLOSE;
          return openai.toolCallCompletion(head, { ...call, arguments: args }, reason, usage);
        }
        return openai.completion(head, text.join(""), reason, usage);
      }
      openSse(request, reply);
      const write = (data: string) => reply.raw.write(data);
      const outcome = await run(
        options,
        admitted,
        reply,
        (token) =>
          write(
            openai.sseEvent(
              call ? openai.toolArgsChunk(head, fragment(token)) : openai.contentChunk(head, token),
            ),
          ),
        () =>
          write(
            openai.sseEvent(call ? openai.toolCallStartChunk(head, call, ARGS_OPEN) : openai.roleChunk(head)),
          ),
      );
      if (outcome.end === "cut") return cut(reply);
      if (outcome.end === "client-closed") return;
      if (call) write(openai.sseEvent(openai.toolArgsChunk(head, ARGS_CLOSE)));
      write(openai.sseEvent(openai.finishChunk(head, reason)));
      if (head.includeUsage)
        write(
          openai.sseEvent(openai.usageChunk(head, openai.usageOf(prompt.tokens, outcome.generated, cached))),
        );
      reply.raw.end(openai.SSE_DONE);
    },
  );
}

function registerMessages(v1: FastifyInstance, options: ProviderRouteOptions): void {
  v1.post<{ Body: MessagesBody }>(
    "/v1/messages",
    {
      config: { handlerTimeoutMs: generationTimeoutMs },
      schema: {
        summary: "Anthropic Messages (stream or not), paced by the model's profile",
        tags,
        body: messagesSchema,
        response: { 200: anyObject },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const system = contentText(body.system);
      const promptText = [system, ...body.messages.map((m) => contentText(m.content))].join("\n");
      const prompt = { text: promptText, tokens: countChatTokens(body.messages, system) };
      const admitted = admit(options, "anthropic", body, prompt, body.max_tokens);
      const head: anthropic.MessageHead = { id: admitted.record.id, model: body.model };
      const reason: anthropic.StopReason = admitted.truncated ? "max_tokens" : "end_turn";
      if (body.stream !== true) {
        const text: string[] = [];
        const outcome = await run(options, admitted, reply, (token) => text.push(token));
        if (outcome.end !== "done") return abandon(reply, outcome.end);
        return anthropic.message(head, text.join(""), reason, {
          input: prompt.tokens,
          output: outcome.generated,
        });
      }
      openSse(request, reply);
      const write = (data: string) => reply.raw.write(data);
      write(anthropic.messageStart(head, prompt.tokens));
      const outcome = await run(
        options,
        admitted,
        reply,
        (token) => write(anthropic.textDelta(token)),
        () => write(anthropic.blockStart() + anthropic.PING),
      );
      if (outcome.end === "cut") return cut(reply);
      if (outcome.end === "client-closed") return;
      write(anthropic.blockStop());
      write(anthropic.messageDelta(reason, outcome.generated));
      reply.raw.end(anthropic.MESSAGE_STOP);
    },
  );
}

function registerModels(v1: FastifyInstance, options: ProviderRouteOptions): void {
  v1.get(
    "/v1/models",
    { schema: { summary: "The models this provider serves", tags, response: { 200: anyObject } } },
    async () => ({
      object: "list",
      data: Object.keys(options.faults.behaviour.models).map((id) => ({
        id,
        object: "model",
        created: 0,
        owned_by: "casebook-sim",
      })),
    }),
  );
}

const embeddingsSchema = {
  type: "object",
  required: ["model", "input"],
  properties: {
    model: { type: "string", minLength: 1, maxLength: 200 },
    input: {
      anyOf: [
        { type: "string", minLength: 1, maxLength: 1_000_000 },
        {
          type: "array",
          minItems: 1,
          maxItems: 2_048,
          items: { type: "string", minLength: 1, maxLength: 1_000_000 },
        },
      ],
    },
    dimensions: { type: "integer", minimum: 1, maximum: MAX_EMBEDDING_DIMENSIONS },
    encoding_format: { type: "string", enum: ["float", "base64"] },
    user: { type: "string" },
  },
} as const;

interface EmbeddingsBody {
  model: string;
  input: string | string[];
  dimensions?: number;
  encoding_format?: "float" | "base64";
}

/** OpenAI's embeddings: one deterministic vector per input (`sim-embedding.ts`), as floats or base64 float32. */
function registerEmbeddings(v1: FastifyInstance, options: ProviderRouteOptions): void {
  v1.post<{ Body: EmbeddingsBody }>(
    "/v1/embeddings",
    {
      schema: {
        summary: "OpenAI embeddings: deterministic vectors of unit length (any model name)",
        tags,
        body: embeddingsSchema,
        response: { 200: anyObject },
      },
    },
    async (request) => {
      const { model, dimensions = DEFAULT_EMBEDDING_DIMENSIONS } = request.body;
      const inputs = typeof request.body.input === "string" ? [request.body.input] : request.body.input;
      let tokens = 0;
      const data = inputs.map((text, index) => {
        tokens += textTokens(text).length;
        const vector = simEmbedding(text, dimensions);
        const embedding =
          request.body.encoding_format === "base64"
            ? Buffer.from(new Float32Array(vector).buffer).toString("base64")
            : vector;
        return { object: "embedding", index, embedding };
      });
      options.state.count("embeddings", inputs.length);
      return { object: "list", data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
    },
  );
}

export function registerProviderRoutes(v1: FastifyInstance, options: ProviderRouteOptions): void {
  registerChat(v1, options);
  registerEmbeddings(v1, options);
  registerMessages(v1, options);
  registerModels(v1, options);
}
