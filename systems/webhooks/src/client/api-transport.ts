/**
 * One JSON call to the webhooks service's public API with the client's bounds, on infra's
 * outbound client (a timeout per phase, a deadline per try, the response read to a bound):
 * the bearer credential, `application/json` both ways, and bounded retries with capped,
 * jittered backoff (kit's `backoffDelayMs`/`jitterDelayMs`, a `Retry-After` honoured up to the
 * cap) — but only when a retry cannot make a second effect:
 *
 * - nothing was sent (DNS, connect): always retried;
 * - sent, outcome unknown (headers/body timeout, reset), or 429/502/503/504: retried only when
 *   the call is safe to repeat — a GET, or a POST carrying an Idempotency-Key (the service
 *   answers a repeat with the first result and writes nothing);
 * - any other 4xx: never retried — WEBHOOKS_CLIENT_REJECTED with the service's problem+json
 *   `code` and `errors` (409 WEBHOOK_IDEMPOTENCY_CONFLICT → WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT).
 *
 * @example
 * const api = new ApiTransport({ url: "http://127.0.0.1:8113", bearer: "whk_…", attempts: 3 });
 * const created = await api.call<{ id: string }>({ method: "POST", path: "/v1/events", body, idempotencyKey: "k1" });
 * api.close();
 */
import { setTimeout as sleep } from "node:timers/promises";
import { OutboundClient, type PhaseTimeouts } from "@casebook/infra/http/outbound";
import { mayHaveBeenProcessed, outboundErrors } from "@casebook/infra/http/outbound-errors";
import { backoffDelayMs, jitterDelayMs } from "@casebook/kit/backoff";
import { isIdempotencyKey } from "@casebook/kit/idempotency-key";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { webhooksClientErrors } from "./client-errors.ts";

/** The service is a neighbour: a connect beyond 1 s is a service that is not there. */
export const DEFAULT_CLIENT_TIMEOUTS: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 1_000,
  headersMs: 5_000,
  bodyMs: 2_000,
});
/** Answers of this API are small JSON documents; a larger one is cut and reported. */
const MAX_RESPONSE_BYTES = 256 * 1024;
/** Statuses that mean "not now" rather than "not this": retried when the call is safe to repeat. */
const TRANSIENT_STATUSES = new Set([429, 502, 503, 504]);

export interface ApiTransportOptions {
  /** The service's base URL, e.g. http://127.0.0.1:8113 (paths are appended). */
  readonly url: string;
  /** Sent as `Authorization: Bearer <bearer>`: a tenant API key, or the admin token. */
  readonly bearer: string;
  /** Tries per call, the first included (1..10). Default 3. */
  readonly attempts?: number;
  /** Pause after the first failed try; doubles each time up to `retryCapMs`. Default 200. */
  readonly retryBaseMs?: number;
  readonly retryCapMs?: number;
  /** Per-phase bounds of one try. Default DEFAULT_CLIENT_TIMEOUTS. */
  readonly timeouts?: Partial<PhaseTimeouts>;
  /** Bound on one try, all phases. Default 8 000. */
  readonly deadlineMs?: number;
  /** Connections to the service at once (more calls wait for one, under the connect bound). Default 16. */
  readonly maxSockets?: number;
  readonly random?: RandomSource;
  readonly userAgent?: string;
}

export interface ApiCall {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Path and query, e.g. `/v1/events`. */
  readonly path: string;
  readonly body?: unknown;
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

function invalid(field: string, expected: string): Error {
  return webhooksClientErrors.create("WEBHOOKS_CLIENT_CONFIG_INVALID", { fields: { field, expected } });
}

function intIn(field: string, value: number, min: number, max: number): number {
  if (!(Number.isInteger(value) && value >= min && value <= max))
    throw invalid(field, `an integer in ${min}..${max}`);
  return value;
}

function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `Retry-After` in seconds (the service sends seconds), as ms; undefined when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1_000;
}

export class ApiTransport {
  readonly #base: URL;
  readonly #bearer: string;
  readonly #attempts: number;
  readonly #retryBaseMs: number;
  readonly #retryCapMs: number;
  readonly #random: RandomSource;
  readonly #client: OutboundClient;

  constructor(options: ApiTransportOptions) {
    try {
      this.#base = new URL(options.url);
    } catch {
      throw invalid("url", "an absolute http(s) URL");
    }
    if (this.#base.protocol !== "http:" && this.#base.protocol !== "https:") throw invalid("url", "http(s)");
    if (!(typeof options.bearer === "string" && /^[\x21-\x7e]{1,512}$/.test(options.bearer)))
      throw invalid("bearer", "1..512 visible ASCII characters");
    this.#bearer = options.bearer;
    this.#attempts = intIn("attempts", options.attempts ?? 3, 1, 10);
    this.#retryBaseMs = intIn("retryBaseMs", options.retryBaseMs ?? 200, 1, 60_000);
    this.#retryCapMs = intIn("retryCapMs", options.retryCapMs ?? 2_000, this.#retryBaseMs, 300_000);
    this.#random = options.random ?? systemRandom;
    this.#client = new OutboundClient({
      addressGuard: "off", // the operator's configured service URL, not a URL a user supplied
      timeouts: { ...DEFAULT_CLIENT_TIMEOUTS, ...options.timeouts },
      deadlineMs: intIn("deadlineMs", options.deadlineMs ?? 8_000, 1, 600_000),
      maxResponseBytes: MAX_RESPONSE_BYTES,
      pool: {
        maxOrigins: 1,
        maxSocketsPerOrigin: intIn("maxSockets", options.maxSockets ?? 16, 1, 1_024),
        idleSocketTimeoutMs: 4_000,
      },
      userAgent: options.userAgent ?? "casebook-webhooks-client",
    });
  }

  /** The call's JSON answer (2xx), after at most `attempts` tries; typed errors otherwise. */
  async call<T>(call: ApiCall): Promise<T> {
    if (call.idempotencyKey !== undefined && !isIdempotencyKey(call.idempotencyKey))
      throw invalid("idempotencyKey", "1 to 255 visible ASCII characters (0x21-0x7E)");
    const repeatable = call.method === "GET" || call.idempotencyKey !== undefined;
    const headers: Record<string, string> = { authorization: `Bearer ${this.#bearer}` };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey;
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const url = new URL(call.path, this.#base);
    let last: { status?: number; cause?: unknown; waitMs?: number } = {};
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      if (attempt > 1) await this.#pause(attempt - 1, last.waitMs, call.signal);
      let response: Awaited<ReturnType<OutboundClient["request"]>>;
      try {
        response = await this.#client.request({
          method: call.method,
          url,
          headers,
          ...(body === undefined ? {} : { body }),
          ...(call.signal === undefined ? {} : { signal: call.signal }),
        });
      } catch (error) {
        if (outboundErrors.is(error, "OUTBOUND_ABORTED")) throw error;
        // Sent with an unknown outcome: repeat only what the service would not apply twice.
        if (outboundErrors.is(error) && mayHaveBeenProcessed(error) && !repeatable)
          throw this.#unavailable(attempt, { cause: error });
        last = { cause: error };
        continue;
      }
      const text = response.body.toString("utf8");
      if (response.status >= 200 && response.status < 300) {
        const parsed = parseJson(text);
        if (parsed === undefined && text !== "")
          throw webhooksClientErrors.create("WEBHOOKS_CLIENT_RESPONSE_INVALID", {
            fields: { status: response.status },
          });
        return parsed as T;
      }
      if (TRANSIENT_STATUSES.has(response.status) || response.status >= 500) {
        last = { status: response.status, waitMs: retryAfterMs(response.headers["retry-after"]) };
        if (!repeatable) throw this.#unavailable(attempt, last);
        continue;
      }
      throw this.#rejected(response.status, parseJson(text));
    }
    throw this.#unavailable(this.#attempts, last);
  }

  close(): void {
    this.#client.close();
  }

  async #pause(
    failures: number,
    retryAfter: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const backoff = jitterDelayMs(
      backoffDelayMs(failures, this.#retryBaseMs, this.#retryCapMs),
      "equal",
      this.#random,
    );
    const waitMs = Math.min(this.#retryCapMs, Math.max(backoff, retryAfter ?? 0));
    // The caller's abort ends the pause too, with the caller's own reason (as an abort mid-call does).
    try {
      await sleep(waitMs, undefined, signal === undefined ? undefined : { signal });
    } catch (error) {
      throw signal?.aborted ? signal.reason : error;
    }
  }

  #unavailable(attempts: number, last: { status?: number; cause?: unknown }): Error {
    return webhooksClientErrors.create("WEBHOOKS_CLIENT_UNAVAILABLE", {
      fields: {
        attempts,
        ...(last.status === undefined ? {} : { lastStatus: last.status }),
        mayHaveBeenProcessed:
          last.status !== undefined || (outboundErrors.is(last.cause) && mayHaveBeenProcessed(last.cause)),
      },
      ...(last.cause === undefined ? {} : { cause: last.cause }),
    });
  }

  #rejected(status: number, problem: unknown): Error {
    const p = (typeof problem === "object" && problem !== null ? problem : {}) as Record<string, unknown>;
    const fields = {
      status,
      code: typeof p.code === "string" ? p.code : undefined,
      errors: Array.isArray(p.errors) ? p.errors : [],
    };
    const detail =
      typeof p.detail === "string" ? p.detail : typeof p.title === "string" ? p.title : undefined;
    if (status === 409 && fields.code === "WEBHOOK_IDEMPOTENCY_CONFLICT")
      return webhooksClientErrors.create("WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT", { fields });
    return webhooksClientErrors.create("WEBHOOKS_CLIENT_REJECTED", {
      fields,
      ...(detail === undefined ? {} : { detail: `webhooks answered ${status}: ${detail}` }),
    });
  }
}
