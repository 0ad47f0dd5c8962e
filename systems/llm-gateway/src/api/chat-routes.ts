/**
 * `POST /v1/chat/completions`, OpenAI-compatible, for a tenant authenticated by its API key:
 * the logical model resolved to its upstream model (LG-19), bad input refused before any
 * upstream call, the request's budget reserved (`budgets.ts`, LG-05/06/07: 429 with
 * Retry-After when it has no room) and settled from the provider's usage after the answer,
 * then either a whole completion or a stream relayed event by event
 * (`sse-response.ts`, LG-01/02/03). The provider is always asked for its usage
 * (`stream_options.include_usage`), so every stream ends with the provider's own count;
 * the usage chunk is passed on only to a client that asked for it.
 *
 * Two outcomes a naive proxy gets wrong:
 * - the client leaves mid-stream (LG-04): the upstream request is aborted at once, so the
 *   provider stops generating tokens nobody will read;
 * - the provider's stream stops before `[DONE]` (a cut, a reset, a silence past the idle
 *   bound): the client gets an error event, never a clean end (OpenAI's SDK takes a stream
 *   that simply ends as complete), and the request is counted `truncated` with the chunks
 *   that did arrive.
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { OutboundStream } from "@casebook/infra/http/outbound";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Destinations } from "../clients/destinations.ts";
import type { UpstreamAnswer } from "../clients/upstream-client.ts";
import type { TenantLimits } from "../domain/budget-plan.ts";
import type { Deployment, ModelCatalog, ServedModel } from "../domain/model-catalog.ts";
import { costNanoUsd, maxCostNanoUsd, type Price, type TokenUsage } from "../domain/pricing.ts";
import { type ChunkUsage, countChunk, dataOf, readChunk, SseSplitter } from "../domain/sse-events.ts";
import { errors } from "../errors.ts";
import type { Outcome, SystemMetrics } from "../metrics.ts";
import type { CachedAnswer, CacheHit } from "../store/semantic-cache-store.ts";
import type { UsageLedger } from "../store/usage-writer.ts";
import {
  anthropicSse,
  chatRequestOf,
  type MessagesRequest,
  messageOf,
  messagesRequestSchema,
} from "./anthropic-dialect.ts";
import {
  type BudgetContext,
  type HeldBudget,
  type HeldSpend,
  reserveBudget,
  reserveSpend,
  settleBudget,
  settleSpend,
} from "./budgets.ts";
import { type ChatRequest, chatRequestSchema, chatResponseView } from "./chat-schemas.ts";
import {
  ACCEPT_MODEL_FALLBACK_HEADER,
  type Routed,
  requestAcceptsModelFallback,
  routeHeaders,
  routeRequest,
} from "./routing.ts";
import {
  CACHE_HEADER,
  type CacheLookup,
  cachedAnswerOf,
  cacheHeaderOf,
  completionOf,
  type SemanticCache,
  streamEventsOf,
} from "./semantic-cache.ts";
import { clientGone, openSseResponse, type SseResponse } from "./sse-response.ts";
import type { StreamShutdown } from "./stream-shutdown.ts";

/** One SSE event from a provider at most: a chunk is a few hundred bytes; a megabyte is a broken stream. */
export const MAX_EVENT_CHARS = 1_048_576;

export interface ChatSettings {
  /** Largest max_tokens a request may ask. */
  readonly maxOutputTokens: number;
  readonly keepAliveMs: number;
  readonly generationTimeoutMs: number;
}

export interface Accounting {
  /** USD per Mtok by upstream model; a model not in it costs 0 (logged at start). */
  readonly prices: ReadonlyMap<string, Price>;
  readonly usage: UsageLedger;
  readonly spendWindowMs: number;
}

export interface ChatRouteOptions {
  readonly catalog: ModelCatalog;
  readonly destinations: Destinations;
  readonly metrics: SystemMetrics;
  readonly clock: Clock;
  readonly settings: ChatSettings;
  readonly budgets: BudgetContext;
  /** Prices, the usage table and the spend window (cost per tenant and model, money budgets). */
  readonly accounting: Accounting;
  /** The semantic cache (LG-11); undefined = off. */
  readonly cache?: SemanticCache | undefined;
  /** Open streams, cut with an error event when the drain bound is about to end (LG-15). */
  readonly streamShutdown: StreamShutdown;
  /** The authenticated tenant of a request, with its quota. */
  tenantOf(request: FastifyRequest): TenantLimits;
}

/** The served model a request names, or 404 naming `model` (OpenAI's `model_not_found`). */
export function resolveModel(catalog: ModelCatalog, name: string): ServedModel {
  const model = catalog.get(name);
  if (model !== undefined) return model;
  throw errors.create("LLM_MODEL_NOT_FOUND", {
    detail: `The model \`${name.slice(0, 200)}\` does not exist or is not served by this gateway.`,
    fields: { param: "model", openAiCode: "model_not_found" },
  });
}

/** The output bound the request asks for (`max_completion_tokens` wins, as in OpenAI's API), checked. */
export function requestedMaxTokens(body: ChatRequest, limit: number): number | undefined {
  const param = body.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
  const asked = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  if (asked !== undefined && asked > limit) {
    throw errors.create("LLM_MAX_TOKENS_TOO_LARGE", {
      detail: `${param} is too large: ${asked}. This gateway allows at most ${limit} completion tokens.`,
      fields: { param, openAiCode: "invalid_value", limit },
    });
  }
  return asked;
}

/** The body sent upstream: the deployment's model name, and always the provider's usage on a stream. */
function upstreamBody(body: ChatRequest, deployment: Deployment): Record<string, unknown> {
  if (body.stream !== true) return { ...body, model: deployment.upstreamModel };
  return {
    ...body,
    model: deployment.upstreamModel,
    stream_options: { ...body.stream_options, include_usage: true },
  };
}

interface RelayResult {
  outcome: Outcome;
  usage: ChunkUsage | undefined;
  contentDeltas: number;
  /** The answer's text, finish reason and model, collected for the semantic cache when asked. */
  text: string;
  finishReason: string | undefined;
  toolCalls: boolean;
  model: string | undefined;
}

function emptyResult(outcome: Outcome): RelayResult {
  return {
    outcome,
    usage: undefined,
    contentDeltas: 0,
    text: "",
    finishReason: undefined,
    toolCalls: false,
    model: undefined,
  };
}

/** Relays the provider's events to the client until `[DONE]`, the client leaving, or the stream failing. */
async function relay(
  stream: AsyncIterable<Buffer>,
  sse: SseResponse,
  options: { clientWantsUsage: boolean; collect: boolean; onFirstContent: () => void },
): Promise<RelayResult> {
  const splitter = new SseSplitter({ maxEventChars: MAX_EVENT_CHARS });
  const decoder = new TextDecoder();
  const result = emptyResult("truncated");
  try {
    for await (const bytes of stream) {
      // The events of one read are whole at the same moment: they leave together, in one write.
      const forward: string[] = [];
      let done = false;
      let firstContent = false;
      for (const event of splitter.push(decoder.decode(bytes, { stream: true }))) {
        const data = dataOf(event);
        // Read whole only when the text is kept; otherwise counted (most chunks: no JSON.parse).
        const full = options.collect ? readChunk(data) : undefined;
        const info = full ?? countChunk(data);
        if (info.kind === "usage") {
          result.usage = info.usage;
          if (!options.clientWantsUsage) continue;
        }
        if (info.kind === "chunk" && info.contentDeltas > 0) {
          firstContent ||= result.contentDeltas === 0;
          result.contentDeltas += info.contentDeltas;
        }
        if (full?.kind === "chunk") {
          result.text += full.text;
          result.finishReason = full.finishReason ?? result.finishReason;
          result.toolCalls ||= full.toolCalls;
          result.model ??= full.model;
        }
        forward.push(event);
        if (info.kind === "done") {
          result.outcome = "ok";
          done = true;
        }
        if (info.kind === "error") result.outcome = "upstream_error";
      }
      // `[DONE]` ends the response in the same write (the provider's own end is still read, so
      // its connection goes back to the pool); anything after it is dropped.
      // The first token's bookkeeping (TTFT, the breaker's success) once its write is issued, not before it.
      const written = done ? sse.end(forward) : sse.writeAll(forward);
      if (firstContent) options.onFirstContent();
      await written;
    }
  } catch {
    // A cut, a reset, a silence past the idle bound, our abort: the outcome says which below.
  }
  if (sse.closed) result.outcome = "cancelled";
  return result;
}

/** One request on its way: what every step after the budget needs. */
/**
 * How the answer is written for the client: OpenAI's shapes as they come, or another API's
 * (`/v1/messages`: Anthropic's), translated event by event and body by body.
 */
export interface Dialect {
  /** The SSE response the relay writes OpenAI events to. */
  sse(sse: SseResponse, x: { id: string; model: string; inputTokens: number }): SseResponse;
  /** A whole answer's body, from OpenAI's chat.completion bytes or object. */
  whole(completion: Buffer | object): Buffer | object;
}

export const openAiDialect: Dialect = { sse: (sse) => sse, whole: (completion) => completion };

interface Exchange {
  readonly options: ChatRouteOptions;
  readonly request: FastifyRequest;
  /** The request as an OpenAI chat request (translated when it came in another API's shape). */
  readonly body: ChatRequest;
  readonly dialect: Dialect;
  readonly reply: FastifyReply;
  readonly model: ServedModel;
  readonly tenantId: string;
  readonly held: HeldBudget;
  readonly spend: HeldSpend | undefined;
  readonly gone: AbortController;
  readonly lookup: CacheLookup;
}

async function streamCompletion(x: Exchange, routed: Routed<OutboundStream>): Promise<void> {
  const { options, request, model } = x;
  const { metrics, clock } = options;
  const startedAtMs = clock.monotonicMs();
  const upstream = routed.answer;
  const sse = x.dialect.sse(
    openSseResponse(request, x.reply, {
      keepAliveMs: options.settings.keepAliveMs,
      signal: x.gone.signal,
      headers: { ...routeHeaders(model, routed), [CACHE_HEADER]: cacheHeaderOf(x.lookup) },
    }),
    { id: request.id, model: routed.admission.deployment.upstreamModel, inputTokens: x.held.inputTokens },
  );
  metrics.openStreams.inc({ model: model.name });
  const shutdownCut = new AbortController();
  const untrack = options.streamShutdown.track(() => {
    shutdownCut.abort();
    upstream.close();
  });
  let result: RelayResult;
  try {
    result = await relay(upstream.body, sse, {
      clientWantsUsage: x.body.stream_options?.include_usage === true,
      collect: x.lookup.kind === "miss",
      onFirstContent: () => {
        routed.admission.firstToken();
        const seconds = (clock.monotonicMs() - startedAtMs) / 1000;
        metrics.ttft.observe({ model: model.name }, seconds);
        metrics.deploymentTtft.observe({ deployment: routed.admission.deployment.id }, seconds);
      },
    });
  } finally {
    untrack();
    upstream.close();
    metrics.openStreams.dec({ model: model.name });
    metrics.keepAlives.inc({ model: model.name }, sse.keepAlives);
  }
  if (result.outcome === "truncated" && shutdownCut.signal.aborted) {
    // Ours, not the provider's: no failure against the deployment's breaker (LG-15).
    const error = errors.create("LLM_GATEWAY_SHUTTING_DOWN");
    sse.fail({ message: error.message, type: "server_error", code: "llm_gateway_shutting_down" });
    request.log.warn(
      { model: model.name, contentDeltas: result.contentDeltas },
      "stream cut at the end of the drain bound",
    );
  } else if (result.outcome === "truncated") {
    // A cut before the first token is the deployment's failure (after it, the first token was its success).
    routed.admission.failed();
    metrics.upstreamFailures.inc({
      model: model.name,
      deployment: routed.admission.deployment.id,
      kind: "truncated",
    });
    const error = errors.create("LLM_STREAM_TRUNCATED");
    sse.fail({ message: error.message, type: "server_error", code: "llm_stream_truncated" });
    request.log.warn(
      { model: model.name, contentDeltas: result.contentDeltas },
      "provider stream cut before its end",
    );
  } else {
    sse.end();
  }
  routed.admission.release();
  const answer: CachedAnswer | undefined =
    result.outcome === "ok" && !result.toolCalls && result.usage !== undefined
      ? {
          content: result.text,
          finishReason: result.finishReason ?? "stop",
          model: result.model ?? routed.admission.deployment.upstreamModel,
          promptTokens: result.usage.promptTokens,
          completionTokens: result.usage.completionTokens,
        }
      : undefined;
  await finish(x, routed, result, answer);
}

/** After the answer: metrics, the budgets settled from the usage, the cost recorded, a miss's answer remembered. */
async function finish(
  x: Exchange,
  routed: Routed<unknown>,
  result: RelayResult,
  answer: CachedAnswer | undefined,
): Promise<void> {
  const { options, request } = x;
  record(options.metrics, x.model, result);
  await settleAll(options, [x.held, routed.destinationHeld], usedTokens(x.held, result), request.log);
  const usage: TokenUsage = {
    promptTokens: result.usage?.promptTokens ?? x.held.inputTokens,
    cachedPromptTokens: result.usage?.cachedPromptTokens ?? 0,
    completionTokens: result.usage?.completionTokens ?? result.contentDeltas,
  };
  const deployment = routed.admission.deployment;
  const price = options.accounting.prices.get(deployment.upstreamModel);
  const cost = price === undefined ? 0 : costNanoUsd(price, usage);
  await account(x, {
    servedBy: deployment.id,
    outcome: result.outcome,
    fallback: routed.fallback,
    usage,
    cost,
  });
  if (x.lookup.kind === "miss" && answer !== undefined && options.cache !== undefined)
    await options.cache.remember(x.tenantId, x.lookup, answer, request.log);
}

/** The spend settled from the cost, the usage row written, the cost counted (failures logged: the answer is out). */
async function account(
  x: Exchange,
  entry: {
    servedBy: string | undefined;
    outcome: Outcome;
    fallback: string;
    usage: TokenUsage;
    cost: number;
  },
): Promise<void> {
  const { options, request } = x;
  await settleSpend(
    { ...options.budgets, spendWindowMs: options.accounting.spendWindowMs },
    x.spend,
    entry.cost,
    request.log,
  );
  options.metrics.costUsd.inc({ model: x.model.name }, entry.cost / 1e9);
  if (entry.usage.cachedPromptTokens > 0)
    options.metrics.tokens.inc(
      { model: x.model.name, kind: "cached_prompt" },
      entry.usage.cachedPromptTokens,
    );
  try {
    await options.accounting.usage.record({
      tenantId: x.tenantId,
      model: x.model.name,
      servedBy: entry.servedBy,
      outcome: entry.outcome,
      fallback: entry.fallback,
      ...entry.usage,
      costNanoUsd: entry.cost,
    });
  } catch (error) {
    request.log.warn({ err: error, cost: entry.cost }, "usage record failed");
  }
}

/** The most a request can cost: at the dearest deployment of its chain. */
function maxCostOf(
  options: ChatRouteOptions,
  model: ServedModel,
  held: HeldBudget,
  maxOutputTokens: number,
): number {
  let most = 0;
  for (const deployment of model.tiers.flat()) {
    const price = options.accounting.prices.get(deployment.upstreamModel);
    if (price !== undefined) most = Math.max(most, maxCostNanoUsd(price, held.inputTokens, maxOutputTokens));
  }
  return most;
}

function settleAll(
  options: ChatRouteOptions,
  helds: readonly HeldBudget[],
  usedTokens: number,
  log: FastifyBaseLogger,
): Promise<unknown> {
  return Promise.all(helds.map((held) => settleBudget(options.budgets, held, usedTokens, log)));
}

/** A cache hit (LG-11): the earlier answer, whole or replayed as a stream; no provider called. */
async function cachedCompletion(x: Exchange, hit: CacheHit): Promise<FastifyReply | undefined> {
  const { options, request, reply } = x;
  const nowS = Math.floor(options.clock.nowMs() / 1000);
  options.metrics.requests.inc({ model: x.model.name, outcome: "cached" });
  // No provider tokens were used: the tokens reserved go back (the request counts for RPM).
  await settleBudget(options.budgets, x.held, 0, request.log);
  const none = { promptTokens: 0, cachedPromptTokens: 0, completionTokens: 0 };
  await account(x, { servedBy: undefined, outcome: "cached", fallback: "none", usage: none, cost: 0 });
  const header = { [CACHE_HEADER]: cacheHeaderOf(x.lookup) };
  if (x.body.stream !== true)
    return reply
      .code(200)
      .headers(header)
      .send(x.dialect.whole(completionOf(hit, request.id, nowS)));
  const sse = x.dialect.sse(
    openSseResponse(request, reply, {
      keepAliveMs: options.settings.keepAliveMs,
      signal: x.gone.signal,
      headers: header,
    }),
    { id: request.id, model: hit.answer.model, inputTokens: x.held.inputTokens },
  );
  const withUsage = x.body.stream_options?.include_usage === true;
  sse.end(streamEventsOf(hit, request.id, nowS, withUsage));
  return undefined;
}

/** The cache's answer for a request; a store that fails is a miss nobody remembers, never a failed request. */
async function lookupCache(
  options: ChatRouteOptions,
  request: FastifyRequest,
  body: ChatRequest,
  model: ServedModel,
  tenantId: string,
): Promise<CacheLookup> {
  if (options.cache === undefined) return { kind: "skip", why: "off" };
  try {
    return await options.cache.lookup(tenantId, model.name, body, request.headers["cache-control"]);
  } catch (error) {
    request.log.warn({ err: error }, "semantic cache lookup failed; the request goes upstream");
    return { kind: "skip", why: "unavailable" };
  }
}

/** The tokens to settle: the provider's count, or (no usage reported) input + the chunks relayed. */
function usedTokens(held: HeldBudget, result: RelayResult): number {
  if (result.usage) return result.usage.promptTokens + result.usage.completionTokens;
  return held.inputTokens + result.contentDeltas;
}

function record(metrics: SystemMetrics, model: ServedModel, result: RelayResult): void {
  metrics.requests.inc({ model: model.name, outcome: result.outcome });
  // Usage as the provider counted it; a stream cut before its usage chunk counts what was relayed.
  const completion = result.usage?.completionTokens ?? result.contentDeltas;
  metrics.tokens.inc({ model: model.name, kind: "completion" }, completion);
  if (result.usage) metrics.tokens.inc({ model: model.name, kind: "prompt" }, result.usage.promptTokens);
}

async function wholeCompletion(x: Exchange, routed: Routed<UpstreamAnswer>): Promise<FastifyReply> {
  const answer = routed.answer;
  routed.admission.firstToken();
  routed.admission.release();
  const chunk = readChunk(answer.body.toString("utf8"));
  const result = emptyResult("ok");
  result.usage = chunk.kind === "chunk" ? chunk.usage : undefined;
  await finish(x, routed, result, x.lookup.kind === "miss" ? cachedAnswerOf(answer.body) : undefined);
  // OpenAI's client gets the provider's bytes as they came: nothing dropped or re-serialized.
  const body =
    x.dialect === openAiDialect ? answer.body : x.dialect.whole(JSON.parse(answer.body.toString("utf8")));
  return x.reply
    .code(200)
    .headers({ ...routeHeaders(x.model, routed), [CACHE_HEADER]: cacheHeaderOf(x.lookup) })
    .type("application/json; charset=utf-8")
    .send(body);
}

/** One chat request through budgets, the cache and the routes, answered in the client's dialect. */
export async function handleChat(
  options: ChatRouteOptions,
  request: FastifyRequest,
  reply: FastifyReply,
  body: ChatRequest,
  dialect: Dialect,
): Promise<FastifyReply | undefined> {
  const model = resolveModel(options.catalog, body.model);
  const requestAccepts = requestAcceptsModelFallback(request.headers[ACCEPT_MODEL_FALLBACK_HEADER]);
  const maxOutputTokens =
    requestedMaxTokens(body, options.settings.maxOutputTokens) ?? options.settings.maxOutputTokens;
  const held = await reserveBudget(options.budgets, {
    tenant: options.tenantOf(request),
    model,
    messages: body.messages,
    maxOutputTokens,
  }).catch((error: unknown) => {
    if (errors.is(error, "LLM_BUDGET_EXCEEDED"))
      options.metrics.requests.inc({ model: model.name, outcome: "rate_limited" });
    throw error;
  });
  const tenant = options.tenantOf(request);
  const tenantId = tenant.id;
  const spendContext = { ...options.budgets, spendWindowMs: options.accounting.spendWindowMs };
  const spend = await reserveSpend(spendContext, tenant, () =>
    maxCostOf(options, model, held, maxOutputTokens),
  ).catch(async (error: unknown) => {
    await settleBudget(options.budgets, held, 0, request.log);
    throw error;
  });
  const lookup = await lookupCache(options, request, body, model, tenantId);
  const gone = clientGone(reply);
  const x: Exchange = { options, request, reply, body, dialect, model, tenantId, held, spend, gone, lookup };
  if (lookup.kind === "hit") return cachedCompletion(x, lookup.hit);
  const stream = body.stream === true;
  const route = {
    model,
    held,
    ttft: stream,
    acceptsModelFallback: tenant.acceptsModelFallback !== false && requestAccepts,
    signal: gone.signal,
    log: request.log,
  };
  try {
    if (stream) {
      const routed = await routeRequest(options, route, (upstream, deployment) =>
        upstream.stream(upstreamBody(body, deployment), gone.signal),
      );
      await streamCompletion(x, routed);
      return undefined;
    }
    const routed = await routeRequest(options, route, (upstream, deployment) =>
      upstream.complete(upstreamBody(body, deployment), gone.signal),
    );
    return await wholeCompletion(x, routed);
  } catch (error) {
    // Nothing was generated: every reserved token goes back (the request still counts for RPM).
    await settleBudget(options.budgets, held, 0, request.log);
    await settleSpend(spendContext, spend, 0, request.log);
    const limited = errors.is(error, "LLM_NO_CAPACITY") || errors.is(error, "LLM_UPSTREAM_RATE_LIMITED");
    options.metrics.requests.inc({
      model: model.name,
      outcome: limited ? "rate_limited" : "upstream_error",
    });
    throw error;
  }
}

/** What a chat request may be refused with, on either dialect's route. */
export const CHAT_ERROR_CODES = [
  "LLM_MODEL_NOT_FOUND",
  "LLM_MAX_TOKENS_TOO_LARGE",
  "LLM_BUDGET_EXCEEDED",
  "LLM_REQUEST_OVER_BUDGET",
  "LLM_BUDGET_UNAVAILABLE",
  "LLM_SPEND_EXCEEDED",
  "LLM_NO_CAPACITY",
  "LLM_UPSTREAM_RATE_LIMITED",
  "LLM_UPSTREAM_REJECTED",
  "LLM_UPSTREAM_FAILED",
  "LLM_UPSTREAM_TIMEOUT",
] as const;

export function registerChatRoutes(scope: FastifyInstance, options: ChatRouteOptions): void {
  scope.post<{ Body: ChatRequest }>(
    "/v1/chat/completions",
    {
      config: { handlerTimeoutMs: options.settings.generationTimeoutMs },
      schema: {
        summary: "Create a chat completion (OpenAI-compatible; stream: true answers text/event-stream)",
        tags: ["openai"],
        security: bearerSecurity,
        errorCodes: [...CHAT_ERROR_CODES],
        body: chatRequestSchema,
        response: { 200: chatResponseView },
      },
    },
    async (request, reply) => handleChat(options, request, reply, request.body, openAiDialect),
  );
}

const anthropicDialect: Dialect = {
  sse: (sse, head) => anthropicSse(sse, { ...head, id: `msg_${head.id}` }),
  whole: (completion) => messageOf(completion as Parameters<typeof messageOf>[0]),
};

/** `POST /v1/messages`: Anthropic's Messages API on the same pipeline (`anthropic-dialect.ts`). */
export function registerMessagesRoute(scope: FastifyInstance, options: ChatRouteOptions): void {
  scope.post<{ Body: MessagesRequest }>(
    "/v1/messages",
    {
      config: { handlerTimeoutMs: options.settings.generationTimeoutMs },
      schema: {
        summary: "Create a message (Anthropic-compatible; stream: true answers Anthropic's SSE events)",
        tags: ["anthropic"],
        security: bearerSecurity,
        errorCodes: [...CHAT_ERROR_CODES],
        body: messagesRequestSchema,
        response: { 200: { type: "object", additionalProperties: true } },
      },
    },
    async (request, reply) =>
      handleChat(options, request, reply, chatRequestOf(request.body), anthropicDialect),
  );
}
