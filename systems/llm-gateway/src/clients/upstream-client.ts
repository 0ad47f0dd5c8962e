/**
 * The gateway's side of an OpenAI-compatible provider, on infra's outbound HTTP (phase
 * timeouts, typed errors, pooled keep-alive connections): a whole completion, or a stream
 * whose body is read as it arrives (`OutboundClient.stream`: an idle bound between chunks,
 * not one on the whole answer, which may take minutes). The provider's refusals become the
 * gateway's own errors: its 429 stays a 429 with its Retry-After, its 4xx a 400 quoting its
 * reason, anything else — 5xx, a timeout, a reset — a 502/504 that names no secret.
 *
 * @example
 * const upstream = new UpstreamClient({ baseUrl: "http://127.0.0.1:8161/v1", timeouts, idleMs: 120_000 });
 * const res = await upstream.stream({ model: "gpt-4o-mini", messages, stream: true }, signal);
 * for await (const chunk of res.body) relay(chunk);
 */
import { OutboundClient, type OutboundStream, type PhaseTimeouts } from "@casebook/infra/http/outbound";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { type Clock, systemClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import { errors } from "../errors.ts";
import {
  ANTHROPIC_VERSION,
  fromAnthropicMessage,
  openAiEventsFromAnthropic,
  toAnthropicRequest,
} from "./anthropic-upstream.ts";

/** A provider's error body read to quote its message: small, the rest is dropped. */
const ERROR_BODY_MAX_BYTES = 16_384;
/** A stream's bytes at most: a 1M-token answer is ~10 MB of chunks. */
export const MAX_STREAM_BYTES = 64 * 1024 * 1024;
/** A whole (non-streamed) completion's bytes at most. */
export const MAX_COMPLETION_BYTES = 16 * 1024 * 1024;

export interface UpstreamClientOptions {
  /** The provider's base URL, `…/v1`. */
  readonly baseUrl: string;
  readonly apiKey?: string | undefined;
  readonly timeouts: PhaseTimeouts;
  /** Longest silence between two chunks of a stream. */
  readonly idleMs: number;
  /** Sockets to the provider at once; more requests wait (under the connect timeout). */
  readonly maxSockets: number;
  /** The provider's API: OpenAI's chat completions (default) or Anthropic's Messages, translated both ways. */
  readonly wire?: UpstreamWire;
  /** Anthropic requires max_tokens: this one when the request names none. */
  readonly defaultMaxTokens?: number;
  /** The `created` of translated answers; default the system clock. */
  readonly clock?: Clock;
}

export type UpstreamWire = "openai" | "anthropic";

export interface UpstreamAnswer {
  readonly status: number;
  readonly body: Buffer;
}

function retryAfterMsOf(header: string | string[] | undefined): number {
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1_000;
}

/** The provider's reason: `error.message` in OpenAI's error body and in Anthropic's alike. */
function messageOf(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.subarray(0, ERROR_BODY_MAX_BYTES).toString("utf8")) as {
      error?: { message?: unknown };
    };
    return typeof parsed.error?.message === "string" ? parsed.error.message.slice(0, 1_000) : "";
  } catch {
    return "";
  }
}

/** The gateway's error for a provider's non-2xx answer. */
export function upstreamRefusal(
  status: number,
  headers: Record<string, unknown>,
  body: Buffer,
): CasebookError {
  const reason = messageOf(body);
  if (status === 429) {
    return errors.create("LLM_UPSTREAM_RATE_LIMITED", {
      fields: {
        retryAfterMs: retryAfterMsOf(headers["retry-after"] as string | undefined),
        upstreamStatus: status,
      },
    });
  }
  if (status >= 400 && status < 500) {
    const detail = `The provider refused the request (${status})${reason === "" ? "." : `: ${reason}`}`;
    return errors.create("LLM_UPSTREAM_REJECTED", { detail, fields: { upstreamStatus: status } });
  }
  return errors.create("LLM_UPSTREAM_FAILED", { fields: { upstreamStatus: status } });
}

/** The gateway's error for a call that got no answer (timeout, refused, reset). */
export function upstreamFailure(error: unknown): CasebookError {
  if (
    outboundErrors.is(error, "OUTBOUND_HEADERS_TIMEOUT") ||
    outboundErrors.is(error, "OUTBOUND_CONNECT_TIMEOUT")
  ) {
    return errors.create("LLM_UPSTREAM_TIMEOUT", { cause: error, fields: { phase: error.fields.phase } });
  }
  const phase = outboundErrors.is(error) ? error.fields.phase : "unknown";
  return errors.create("LLM_UPSTREAM_FAILED", { cause: error, fields: { phase } });
}

export class UpstreamClient {
  /** The endpoints, parsed once (a URL string would be parsed again on every call). */
  readonly #chatUrl: URL;
  readonly #messagesUrl: URL;
  readonly #embeddingsUrl: URL;
  readonly #headers: Record<string, string>;
  readonly #http: OutboundClient;
  readonly #idleMs: number;
  readonly #wire: UpstreamWire;
  readonly #defaultMaxTokens: number;
  readonly #clock: Clock;

  constructor(options: UpstreamClientOptions) {
    const baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#chatUrl = new URL(`${baseUrl}/chat/completions`);
    this.#messagesUrl = new URL(`${baseUrl}/messages`);
    this.#embeddingsUrl = new URL(`${baseUrl}/embeddings`);
    this.#wire = options.wire ?? "openai";
    this.#defaultMaxTokens = options.defaultMaxTokens ?? 4_096;
    this.#clock = options.clock ?? systemClock;
    const key = options.apiKey;
    this.#headers =
      this.#wire === "anthropic"
        ? {
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            ...(key === undefined ? {} : { "x-api-key": key }),
          }
        : {
            "content-type": "application/json",
            ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
          };
    // A configured URL, not a user's: no SSRF guard (the operator chose it).
    this.#http = new OutboundClient({
      addressGuard: "off",
      timeouts: options.timeouts,
      maxResponseBytes: MAX_COMPLETION_BYTES,
      pool: { maxOrigins: 16, maxSocketsPerOrigin: options.maxSockets, idleSocketTimeoutMs: 4_000 },
      userAgent: "casebook-llm-gateway/0.1",
    });
    this.#idleMs = options.idleMs;
  }

  /** The provider's endpoint and the request in its API. */
  #call(body: object): { url: URL; body: string } {
    if (this.#wire === "openai") return { url: this.#chatUrl, body: JSON.stringify(body) };
    return {
      url: this.#messagesUrl,
      body: JSON.stringify(toAnthropicRequest(body, this.#defaultMaxTokens)),
    };
  }

  /** A whole completion (`stream` false): its status and body (OpenAI's chat.completion), whatever the status. */
  async complete(body: object, signal: AbortSignal): Promise<UpstreamAnswer> {
    const call = this.#call(body);
    try {
      const res = await this.#http.request({
        method: "POST",
        url: call.url,
        headers: this.#headers,
        body: call.body,
        signal,
      });
      if (res.status !== 200) throw upstreamRefusal(res.status, res.headers, res.body);
      if (this.#wire === "anthropic")
        return {
          status: res.status,
          body: fromAnthropicMessage(res.body, Math.floor(this.#clock.nowMs() / 1000)),
        };
      return { status: res.status, body: res.body };
    } catch (error) {
      throw errors.is(error) ? error : upstreamFailure(error);
    }
  }

  /** A stream, open at its 200 head; a refusal or no answer throws the gateway's error before any byte is relayed. */
  async stream(body: object, signal: AbortSignal): Promise<OutboundStream> {
    const call = this.#call(body);
    let res: OutboundStream;
    try {
      res = await this.#http.stream({
        method: "POST",
        url: call.url,
        headers: this.#headers,
        body: call.body,
        signal,
        idleMs: this.#idleMs,
        maxStreamBytes: MAX_STREAM_BYTES,
      });
    } catch (error) {
      throw upstreamFailure(error);
    }
    if (res.status === 200 && this.#wire === "anthropic") {
      const opened = res;
      return {
        status: opened.status,
        headers: opened.headers,
        timings: opened.timings,
        body: openAiEventsFromAnthropic(opened.body, Math.floor(this.#clock.nowMs() / 1000)),
        close: () => opened.close(),
      };
    }
    if (res.status === 200) return res;
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of res.body) {
        chunks.push(chunk);
        bytes += chunk.length;
        if (bytes > ERROR_BODY_MAX_BYTES) break;
      }
    } catch {
      // The refusal is what matters; a body we could not read only loses its quoted reason.
    } finally {
      res.close();
    }
    throw upstreamRefusal(res.status, res.headers, Buffer.concat(chunks));
  }

  /**
   * OpenAI's `/v1/embeddings` (the semantic cache's upstream embedder): the parsed body of a
   * 200; a refusal or no answer throws the gateway's error. OpenAI wire only.
   */
  async embeddings(body: object, signal: AbortSignal): Promise<unknown> {
    if (this.#wire !== "openai") throw new TypeError("embeddings need an OpenAI-compatible destination");
    try {
      const res = await this.#http.request({
        method: "POST",
        url: this.#embeddingsUrl,
        headers: this.#headers,
        body: JSON.stringify(body),
        signal,
      });
      if (res.status !== 200) throw upstreamRefusal(res.status, res.headers, res.body);
      return JSON.parse(res.body.toString("utf8")) as unknown;
    } catch (error) {
      throw errors.is(error) ? error : upstreamFailure(error);
    }
  }

  close(): void {
    this.#http.close();
  }
}
