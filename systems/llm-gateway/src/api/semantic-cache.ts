/**
 * The semantic cache around a chat request (LG-11, LG-12, LG-13): for a deterministic
 * request (`domain/cache-policy.ts`) the conversation is embedded (the local lexical
 * embedder, `domain/lexical-embedder.ts`, by default; the upstream's `/v1/embeddings`,
 * `clients/upstream-embedder.ts`, when configured) and the tenant's most similar earlier
 * answer of the same scope is looked up (`store/semantic-cache-store.ts`; the embedder's
 * vector space is part of the scope, so vectors of two embedders are never compared); at or above the threshold, and
 * when the two prompts' words agree too (`domain/lexical-agreement.ts`), it is the answer — as a whole completion or replayed as a stream — and no provider is called.
 * A miss goes upstream, and a whole, successful answer is remembered for the tenant.
 *
 * Bounded, because a cache must never cost more than it saves (issue 21's 500 streams held
 * a 30-connection pool with a lookup and an insert each, and pushed TTFT p99 to 14 s):
 * lookups pass kit's `AdmissionGate` — `maxLookups` at once (a share of the database pool),
 * `lookupQueue` waiting at most `lookupWaitMs` — and a request that finds it full is answered
 * uncached (`skip; busy`, `llm_gateway_cache_lookups_total{result="shed"}`), embedding
 * nothing; inserts go through the bounded batch writer (`store/semantic-cache-writer.ts`),
 * which sheds rather than queues (`llm_gateway_cache_writes_total{result}`).
 * Strictly per tenant: the tenant is in every lookup. This is the gateway's cache of
 * answers; the provider's prompt (prefix) caching is another mechanism the gateway only
 * accounts for (cached prompt tokens in usage and cost, LG-13).
 *
 * @example
 * const hit = await cache.lookup(tenantId, body, request.headers["cache-control"]);
 * if (hit.kind === "hit") return reply.send(completionOf(hit.hit, request.id));
 */
import { createHash } from "node:crypto";
import { AdmissionGate } from "@casebook/kit/admission-gate";
import { type Clock, systemClock } from "@casebook/kit/clock";
import type { FastifyBaseLogger } from "fastify";
import { type CacheableRequest, cacheDecision, cacheScope, promptText } from "../domain/cache-policy.ts";
import { type Embedder, lexicalEmbedder } from "../domain/embedder.ts";
import { lexicallyAgree } from "../domain/lexical-agreement.ts";
import type { SystemMetrics } from "../metrics.ts";
import type { CachedAnswer, CacheHit, SemanticCacheStore } from "../store/semantic-cache-store.ts";
import type { SemanticCacheWriter } from "../store/semantic-cache-writer.ts";

/** On a response: `hit; similarity=0.93`, `miss`, or `skip; <why>`. */
export const CACHE_HEADER = "x-llm-gateway-cache";

export interface CacheSettings {
  readonly enabled: boolean;
  /** Cosine similarity at or above which an earlier answer is served (LG-11: never without one). */
  readonly threshold: number;
  readonly ttlMs: number;
  /** Lookups (an embedding, then a query holding a pool connection) at once. */
  readonly maxLookups: number;
  /** Lookups waiting for one of those slots; past it a request is answered uncached. */
  readonly lookupQueue: number;
  /** Longest wait for a slot, in ms; past it the request is answered uncached. */
  readonly lookupWaitMs: number;
}

/** Defaults: a share of a 10-connection pool, a queue of a few rounds of it, a wait well under a TTFT. */
export const DEFAULT_CACHE_MAX_LOOKUPS = 4;
export const DEFAULT_CACHE_LOOKUP_QUEUE = 64;
export const DEFAULT_CACHE_LOOKUP_WAIT_MS = 50;

export type CacheLookup =
  | { kind: "hit"; hit: CacheHit }
  | { kind: "miss"; scope: string; prompt: string; embedding: Float32Array }
  | { kind: "skip"; why: string };

export class SemanticCache {
  readonly #store: SemanticCacheStore;
  readonly #writer: SemanticCacheWriter;
  readonly #settings: CacheSettings;
  readonly #metrics: SystemMetrics;
  readonly #embedder: Embedder;
  readonly #lookups: AdmissionGate;

  constructor(
    store: { lookups: SemanticCacheStore; writer: SemanticCacheWriter },
    settings: CacheSettings,
    metrics: SystemMetrics,
    embedder: Embedder = lexicalEmbedder,
    clock: Clock = systemClock,
  ) {
    if (!(settings.threshold > 0 && settings.threshold <= 1))
      throw new RangeError(`a cache threshold is in (0, 1], got ${settings.threshold}`);
    this.#store = store.lookups;
    this.#writer = store.writer;
    this.#settings = settings;
    this.#metrics = metrics;
    this.#embedder = embedder;
    this.#lookups = new AdmissionGate({
      maxInFlight: settings.maxLookups,
      maxQueued: settings.lookupQueue,
      maxQueueWaitMs: settings.lookupWaitMs,
      clock,
    });
  }

  async lookup(
    tenantId: string,
    model: string,
    body: CacheableRequest,
    cacheControl: string | undefined,
  ): Promise<CacheLookup> {
    if (!this.#settings.enabled) return { kind: "skip", why: "off" };
    const decision = cacheDecision(body, cacheControl);
    if (!decision.cacheable) {
      this.#metrics.cacheLookups.inc({ model, result: "skipped" });
      return { kind: "skip", why: decision.why };
    }
    // Admitted first: a request shed costs neither an embedding nor a connection.
    const fate = await this.#lookups.enter();
    if (fate !== "admitted") {
      this.#metrics.cacheLookups.inc({ model, result: "shed" });
      return { kind: "skip", why: "busy" };
    }
    let found: CacheHit | undefined;
    let miss: Extract<CacheLookup, { kind: "miss" }>;
    try {
      const scope = createHash("sha256")
        .update(`${this.#embedder.id}\n${cacheScope(body)}`)
        .digest("hex");
      const prompt = promptText(body.messages);
      const embedding = await this.#embedder.embed(prompt);
      miss = { kind: "miss", scope, prompt, embedding };
      const stop = this.#metrics.cacheLookupSeconds.startTimer({ model });
      found = await this.#store.lookup({
        tenantId,
        scope,
        embedding,
        threshold: this.#settings.threshold,
      });
      stop();
    } finally {
      this.#lookups.leave();
    }
    const prompt = miss.prompt;
    // Similar vectors are not enough for long prompts (domain/lexical-agreement.ts): the words must agree too.
    const hit = found !== undefined && lexicallyAgree(prompt, found.prompt) ? found : undefined;
    this.#metrics.cacheLookups.inc({ model, result: hit ? "hit" : found ? "refused" : "miss" });
    return hit ? { kind: "hit", hit } : miss;
  }

  /**
   * Remembers a successful answer of a miss through the batch writer; shed when its queue is
   * full, a failure logged — either way counted (the answer is already out).
   */
  async remember(
    tenantId: string,
    miss: Extract<CacheLookup, { kind: "miss" }>,
    answer: CachedAnswer,
    log: FastifyBaseLogger,
  ): Promise<void> {
    const { scope, prompt, embedding } = miss;
    const result = await this.#writer.remember(
      { tenantId, scope, prompt, embedding, answer, ttlMs: this.#settings.ttlMs },
      (error) => log.warn({ err: error }, "semantic cache: the answer could not be stored"),
    );
    this.#metrics.cacheWrites.inc({ result });
  }
}

/** The header value of a lookup. */
export function cacheHeaderOf(lookup: CacheLookup): string {
  if (lookup.kind === "hit") return `hit; similarity=${lookup.hit.similarity.toFixed(4)}`;
  return lookup.kind === "miss" ? "miss" : `skip; ${lookup.why}`;
}

function usageOf(answer: CachedAnswer) {
  return {
    prompt_tokens: answer.promptTokens,
    completion_tokens: answer.completionTokens,
    total_tokens: answer.promptTokens + answer.completionTokens,
  };
}

/** A hit as OpenAI's chat.completion. */
export function completionOf(hit: CacheHit, requestId: string, nowS: number) {
  return {
    id: `chatcmpl-cache-${requestId}`,
    object: "chat.completion",
    created: nowS,
    model: hit.answer.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: hit.answer.content, refusal: null },
        logprobs: null,
        finish_reason: hit.answer.finishReason,
      },
    ],
    usage: usageOf(hit.answer),
  };
}

/** A hit as the SSE events of a stream: role, content, finish, [usage], [DONE]. */
export function streamEventsOf(hit: CacheHit, requestId: string, nowS: number, withUsage: boolean): string[] {
  const head = {
    id: `chatcmpl-cache-${requestId}`,
    object: "chat.completion.chunk",
    created: nowS,
    model: hit.answer.model,
  };
  const chunk = (choices: unknown[], extra: object = {}) =>
    `data: ${JSON.stringify({ ...head, choices, ...extra })}\n\n`;
  const events = [
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: hit.answer.content }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: hit.answer.finishReason }]),
  ];
  if (withUsage) events.push(chunk([], { usage: usageOf(hit.answer) }));
  events.push("data: [DONE]\n\n");
  return events;
}

/** What a whole completion's body gives the cache, or undefined when it is not plain text (tool calls, refusals). */
export function cachedAnswerOf(body: Buffer): CachedAnswer | undefined {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as {
      model?: unknown;
      choices?: Array<{ message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }>;
      usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
    };
    const choice = parsed.choices?.[0];
    if (parsed.choices?.length !== 1 || typeof choice?.message?.content !== "string") return undefined;
    if (choice.message.tool_calls !== undefined && choice.message.tool_calls !== null) return undefined;
    return {
      content: choice.message.content,
      finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : "stop",
      model: typeof parsed.model === "string" ? parsed.model : "",
      promptTokens: Number(parsed.usage?.prompt_tokens ?? 0),
      completionTokens: Number(parsed.usage?.completion_tokens ?? 0),
    };
  } catch {
    return undefined;
  }
}
