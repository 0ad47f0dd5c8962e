/**
 * The payments service's HTTP client to the card acquirer (PY-06, PY-12, PY-18):
 *
 * - every call has a deadline, split by phase — connect, response headers, body (infra's outbound
 *   client, `@casebook/infra/http/outbound`: its errors carry the phase) — because the
 *   phase decides what a failure MEANS: a failed connect sent nothing (safe to retry, surely not
 *   charged); a timeout after the request went out is an UNKNOWN outcome the saga resolves by
 *   asking the acquirer's status by key, never by guessing;
 * - retries (kit backoff, equal jitter) only for failures that certainly did not process the call,
 *   and every try carries the SAME idempotency key, so even a wrong guess cannot charge twice;
 * - a circuit breaker (kit) fails calls fast while the acquirer is down, and a token bucket caps
 *   this process's call rate on the external bottleneck (PY-12).
 *
 * Answers are outcomes, never exceptions: the saga's state machine decides what each means.
 * Each call reports its outcome and duration to an optional observer (metrics.ts, PY-17),
 * logs with the payment's correlation id, and sends it as `x-correlation-id`.
 *
 * @example
 * const acquirer = new AcquirerClient({ baseUrl, clock: systemClock, random: systemRandom });
 * const outcome = await acquirer.authorize({ idempotencyKey, merchantId, amountMinor: 5000n, currency: "BRL", cardToken });
 * if (outcome.kind === "unknown") await acquirer.queryByKey(idempotencyKey);
 */
import { setTimeout as sleepMs } from "node:timers/promises";
import type { Logger } from "@casebook/infra/http/logger";
import { OutboundClient, type OutboundResponse, type PhaseTimeouts } from "@casebook/infra/http/outbound";
import { mayHaveBeenProcessed, outboundErrors, phaseOf } from "@casebook/infra/http/outbound-errors";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { CircuitBreaker, type CircuitBreakerOptions } from "@casebook/kit/circuit-breaker";
import type { Clock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import type { RandomSource } from "@casebook/kit/random";
import { TokenBucket } from "@casebook/kit/token-bucket";
import type { StepOutcome } from "../domain/payment-saga.ts";

export type CallPhase = "connect" | "headers" | "body";

/** The acquirer operations, as metric labels. */
export type AcquirerOperation = "authorize" | "query" | "capture" | "void" | "refund" | "refund_query";

/** Told of every finished call (all tries): its operation, outcome kind ("error" if it threw) and duration. */
export interface AcquirerCallObserver {
  callFinished(operation: AcquirerOperation, outcome: string, seconds: number): void;
}

/** The header carrying the payment's correlation id (its idempotency key) to the acquirer (PY-17). */
export const CORRELATION_HEADER = "x-correlation-id";

export type { PhaseTimeouts } from "@casebook/infra/http/outbound";

export interface AcquirerClientOptions {
  baseUrl: string;
  clock: Clock;
  random: RandomSource;
  timeouts?: Partial<PhaseTimeouts>;
  /** Tries per call (the first included) for failures that processed nothing. Default 3. */
  maxTries?: number;
  retryBaseMs?: number;
  retryCapMs?: number;
  /** Bound on one call, all tries, waits and phases included. The saga lease must exceed it. */
  callDeadlineMs?: number;
  breaker?: Partial<Omit<CircuitBreakerOptions, "clock" | "name">>;
  /** Token bucket on calls: burst and sustained rate. Default 100 burst, 200/s. */
  rateLimit?: { capacity: number; ratePerS: number };
  /** Largest response body read, in bytes. */
  maxBodyBytes?: number;
  sleep?: (ms: number) => Promise<void>;
  observer?: AcquirerCallObserver;
  /** Per-call lines (debug; failures at warn), each with the payment's correlationId. */
  log?: Logger;
}

export interface AuthorizeRequest {
  idempotencyKey: string;
  merchantId: string;
  amountMinor: bigint;
  currency: string;
  cardToken: string;
}

export type RefundOutcome =
  | { kind: "refunded"; refundId: string }
  | Extract<StepOutcome, { kind: "unknown" | "unavailable" | "rejected" }>;

/** What the acquirer says of a refund key: refunded, never seen (`not-found`), or no answer. */
export type RefundQueryOutcome = RefundOutcome | { kind: "not-found" };

/** What one HTTP exchange gave: an answer, nothing sent, or sent without an answer. */
type Exchange =
  | { kind: "answer"; status: number; body: Record<string, unknown>; retryAfterMs: number }
  | { kind: "not-sent"; reason: string; retryAfterMs: number }
  | { kind: "no-answer"; phase: CallPhase; reason: string };

export const defaultPhaseTimeouts: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 1_000,
  headersMs: 2_000,
  bodyMs: 1_000,
});

function parseJson(text: string): Record<string, unknown> {
  if (text === "") return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function retryAfterOf(header: string | string[] | undefined, body: Record<string, unknown>): number {
  const fromBody = Number(body.retryAfterMs);
  if (Number.isFinite(fromBody) && fromBody > 0) return fromBody;
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

/** The failure in words, for the outcome's `reason` and the log (the strings this client always gave). */
function reasonOf(error: CasebookError): string {
  const { phase, timeoutMs, limitBytes } = error.fields;
  switch (error.code) {
    case "OUTBOUND_CONNECT_TIMEOUT":
    case "OUTBOUND_HEADERS_TIMEOUT":
    case "OUTBOUND_BODY_TIMEOUT":
      return `${String(phase)} timeout after ${String(timeoutMs)} ms`;
    case "OUTBOUND_RESPONSE_TOO_LARGE":
      return `body over ${String(limitBytes)} bytes`;
    default:
      return error.cause instanceof Error ? error.cause.message : error.message;
  }
}

/** A header value Node accepts whatever the merchant id holds: visible ASCII as is, anything else encoded. */
function headerSafe(value: string): string {
  return /^[\x21-\x7e]{1,512}$/.test(value) ? value : encodeURIComponent(value).slice(0, 512);
}

export class AcquirerClient {
  readonly callDeadlineMs: number;
  readonly breaker: CircuitBreaker;
  readonly #base: URL;
  readonly #clock: Clock;
  readonly #timeouts: PhaseTimeouts;
  readonly #maxTries: number;
  readonly #backoff: BackoffPolicy;
  readonly #bucket: TokenBucket;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #http: OutboundClient;
  readonly #observer: AcquirerCallObserver | undefined;
  readonly #log: Logger | undefined;

  constructor(options: AcquirerClientOptions) {
    this.#base = new URL(options.baseUrl);
    this.#clock = options.clock;
    this.#timeouts = { ...defaultPhaseTimeouts, ...options.timeouts };
    this.#maxTries = options.maxTries ?? 3;
    this.callDeadlineMs = options.callDeadlineMs ?? 10_000;
    const perTryMs = this.#timeouts.connectMs + this.#timeouts.headersMs + this.#timeouts.bodyMs;
    if (perTryMs > this.callDeadlineMs) throw new RangeError("callDeadlineMs must cover one try's phases");
    this.#backoff = new BackoffPolicy({
      baseMs: options.retryBaseMs ?? 50,
      capMs: options.retryCapMs ?? 1_000,
      jitter: "equal",
      random: options.random,
      maxAttempts: this.#maxTries,
    });
    this.breaker = new CircuitBreaker({
      name: "acquirer",
      clock: options.clock,
      failureThreshold: 5,
      openDurationMs: 5_000,
      ...options.breaker,
    });
    const rate = options.rateLimit ?? { capacity: 100, ratePerS: 200 };
    this.#bucket = new TokenBucket({ ...rate, nowMs: options.clock.monotonicMs() });
    this.#sleep = options.sleep ?? ((ms) => sleepMs(ms));
    this.#http = new OutboundClient({
      // A configured internal URL, not a user's: no SSRF guard (it is on loopback in tests).
      addressGuard: "off",
      timeouts: this.#timeouts,
      maxResponseBytes: options.maxBodyBytes ?? 256 * 1024,
      responseOverflow: "error",
      // Keep-alive with a bound: a pool of connections to one host, never unbounded. Idle
      // sockets close before the acquirer's 72 s keep-alive would close them under us.
      pool: { maxOrigins: 1, maxSocketsPerOrigin: 64, idleSocketTimeoutMs: 60_000 },
      clock: options.clock,
    });
    this.#observer = options.observer;
    this.#log = options.log;
  }

  /** Authorizes with `idempotencyKey` — the same key on every try (PY-06). */
  authorize(input: AuthorizeRequest): Promise<StepOutcome> {
    return this.#observed("authorize", input.idempotencyKey, () => this.#authorize(input));
  }

  async #authorize(input: AuthorizeRequest): Promise<StepOutcome> {
    const body = { ...input, amountMinor: input.amountMinor.toString() };
    const exchange = await this.#call("POST", "/v1/authorizations", body, input.idempotencyKey);
    if (exchange.kind !== "answer" || exchange.status !== 200) return this.#failure(exchange);
    const id = String(exchange.body.id);
    if (exchange.body.outcome === "approved") return { kind: "approved", authorizationId: id };
    return {
      kind: "declined",
      authorizationId: id,
      reason: String(exchange.body.declineReason ?? "declined"),
    };
  }

  /** The acquirer's status of the authorization made with `idempotencyKey`: how a saga resolves "unknown". */
  queryByKey(idempotencyKey: string): Promise<StepOutcome> {
    return this.#observed("query", idempotencyKey, () => this.#queryByKey(idempotencyKey));
  }

  async #queryByKey(idempotencyKey: string): Promise<StepOutcome> {
    const path = `/v1/authorizations/by-key/${encodeURIComponent(idempotencyKey)}`;
    const exchange = await this.#call("GET", path, undefined, idempotencyKey);
    if (exchange.kind === "answer" && exchange.status === 404) return { kind: "not-found" };
    if (exchange.kind !== "answer" || exchange.status !== 200) return this.#failure(exchange);
    return this.#viewOutcome(exchange.body);
  }

  /**
   * `correlationId`: the payment's acquirer key, for logs and the correlation header.
   * `amountMinor`: a partial capture (PY-16, at most the authorized amount); omitted, all of it.
   */
  capture(authorizationId: string, correlationId?: string, amountMinor?: bigint): Promise<StepOutcome> {
    return this.#observed("capture", correlationId, () =>
      this.#settle(authorizationId, "capture", correlationId, amountMinor),
    );
  }

  void(authorizationId: string, correlationId?: string): Promise<StepOutcome> {
    return this.#observed("void", correlationId, () => this.#settle(authorizationId, "void", correlationId));
  }

  async #settle(
    authorizationId: string,
    action: "capture" | "void",
    correlationId?: string,
    amountMinor?: bigint,
  ) {
    const path = `/v1/authorizations/${encodeURIComponent(authorizationId)}/${action}`;
    const body =
      action === "void"
        ? undefined
        : amountMinor === undefined
          ? {}
          : { amountMinor: amountMinor.toString() };
    const exchange = await this.#call("POST", path, body, correlationId);
    if (exchange.kind !== "answer" || exchange.status !== 200) return this.#failure(exchange);
    return this.#viewOutcome(exchange.body);
  }

  /** A partial or full refund with its own idempotency key (PY-15). */
  refund(
    authorizationId: string,
    request: { idempotencyKey: string; amountMinor: bigint; correlationId?: string },
  ): Promise<RefundOutcome> {
    return this.#observed("refund", request.correlationId, () => this.#refund(authorizationId, request));
  }

  async #refund(
    authorizationId: string,
    request: { idempotencyKey: string; amountMinor: bigint; correlationId?: string },
  ): Promise<RefundOutcome> {
    const body = { idempotencyKey: request.idempotencyKey, amountMinor: request.amountMinor.toString() };
    const path = `/v1/authorizations/${encodeURIComponent(authorizationId)}/refunds`;
    const exchange = await this.#call("POST", path, body, request.correlationId);
    if (exchange.kind === "answer" && exchange.status === 200) {
      return { kind: "refunded", refundId: String(exchange.body.id) };
    }
    return this.#failure(exchange) as RefundOutcome;
  }

  /**
   * The acquirer's record of the refund made with `idempotencyKey` (PY-15): how a refund whose
   * answer was lost is resolved before anything is sent again. `correlationId` as for `refund`.
   */
  queryRefundByKey(idempotencyKey: string, correlationId?: string): Promise<RefundQueryOutcome> {
    return this.#observed("refund_query", correlationId, () =>
      this.#queryRefund(idempotencyKey, correlationId),
    );
  }

  async #queryRefund(idempotencyKey: string, correlationId?: string): Promise<RefundQueryOutcome> {
    const path = `/v1/refunds/by-key/${encodeURIComponent(idempotencyKey)}`;
    const exchange = await this.#call("GET", path, undefined, correlationId);
    if (exchange.kind === "answer" && exchange.status === 404) return { kind: "not-found" };
    if (exchange.kind === "answer" && exchange.status === 200) {
      return { kind: "refunded", refundId: String(exchange.body.id) };
    }
    return this.#failure(exchange) as RefundOutcome;
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.#http.close();
  }

  /** Runs one call, then reports its outcome and duration to the observer and the log (PY-17). */
  async #observed<T extends { kind: string }>(
    operation: AcquirerOperation,
    correlationId: string | undefined,
    run: () => Promise<T>,
  ): Promise<T> {
    const startMs = this.#clock.monotonicMs();
    let outcome: T | undefined;
    try {
      outcome = await run();
      return outcome;
    } finally {
      const durationMs = this.#clock.monotonicMs() - startMs;
      const kind = outcome?.kind ?? "error";
      this.#observer?.callFinished(operation, kind, durationMs / 1000);
      const fields = { correlationId, operation, outcome: kind, durationMs };
      const reason = outcome !== undefined && "reason" in outcome ? outcome.reason : undefined;
      if (kind === "unknown" || kind === "unavailable" || kind === "rejected" || kind === "error") {
        this.#log?.warn(
          { ...fields, reason, code: (outcome as { code?: string } | undefined)?.code },
          "acquirer call failed",
        );
      } else this.#log?.debug(fields, "acquirer call");
    }
  }

  #viewOutcome(view: Record<string, unknown>): StepOutcome {
    const authorizationId = String(view.id);
    switch (view.status) {
      case "approved":
        return { kind: "approved", authorizationId };
      case "declined":
        return { kind: "declined", authorizationId, reason: String(view.declineReason ?? "declined") };
      case "captured":
        return { kind: "captured", authorizationId };
      case "voided":
        return { kind: "voided", authorizationId };
      default:
        return { kind: "rejected", code: `UNEXPECTED_STATUS_${String(view.status)}` };
    }
  }

  /** Maps an exchange that is not the expected 200 to the saga's outcome vocabulary. */
  #failure(exchange: Exchange): Extract<StepOutcome, { kind: "unknown" | "unavailable" | "rejected" }> {
    if (exchange.kind === "no-answer")
      return { kind: "unknown", reason: `${exchange.phase}: ${exchange.reason}` };
    if (exchange.kind === "not-sent") {
      return { kind: "unavailable", reason: exchange.reason, retryAfterMs: exchange.retryAfterMs };
    }
    if (exchange.status === 429 || exchange.status >= 500) {
      return {
        kind: "unavailable",
        reason: `status ${exchange.status}`,
        retryAfterMs: exchange.retryAfterMs,
      };
    }
    return { kind: "rejected", code: String(exchange.body.code ?? `HTTP_${exchange.status}`) };
  }

  /** Tries until an answer, an unknown outcome, the try limit or the deadline. */
  async #call(method: string, path: string, body?: unknown, correlationId?: string): Promise<Exchange> {
    const startMs = this.#clock.monotonicMs();
    let last: Exchange = { kind: "not-sent", reason: "deadline", retryAfterMs: 0 };
    for (let attempt = 1; attempt <= this.#maxTries; attempt++) {
      const admitted = await this.#admit(startMs);
      if (admitted !== undefined) return admitted;
      last = await this.#exchange(method, path, body, correlationId);
      const failed = last.kind !== "answer" || last.status >= 500 || last.status === 429;
      if (failed) this.breaker.onFailure();
      else this.breaker.onSuccess();
      // Only a failure that processed nothing is retried here; an unknown outcome goes to the saga.
      const retryable = last.kind === "not-sent" || (last.kind === "answer" && failed);
      if (!retryable) return last;
      const next = this.#backoff.next(attempt, this.#clock.monotonicMs() - startMs);
      const retryAfterMs = last.kind === "no-answer" ? 0 : last.retryAfterMs;
      const delayMs = next.retry ? Math.max(next.delayMs, retryAfterMs) : 0;
      if (
        !next.retry ||
        this.#clock.monotonicMs() - startMs + delayMs + this.#perTryMs() > this.callDeadlineMs
      ) {
        return last;
      }
      await this.#sleep(delayMs);
    }
    return last;
  }

  #perTryMs(): number {
    return this.#timeouts.connectMs + this.#timeouts.headersMs + this.#timeouts.bodyMs;
  }

  /** Breaker then rate limit; returns a not-sent exchange when the call may not go out. */
  async #admit(startMs: number): Promise<Exchange | undefined> {
    if (!this.breaker.canRequest()) {
      return { kind: "not-sent", reason: "breaker open", retryAfterMs: this.breaker.retryAfterMs() };
    }
    // A bounded wait: at most until the deadline leaves room for one try.
    for (let round = 0; round < 100; round++) {
      const waitMs = this.#bucket.take(this.#clock.monotonicMs());
      if (waitMs === 0) return undefined;
      const spentMs = this.#clock.monotonicMs() - startMs;
      if (spentMs + waitMs + this.#perTryMs() > this.callDeadlineMs) {
        this.breaker.onSuccess(); // the acquirer is not at fault: free a half-open probe slot
        return { kind: "not-sent", reason: "rate limited", retryAfterMs: waitMs };
      }
      await this.#sleep(waitMs);
    }
    return { kind: "not-sent", reason: "rate limited", retryAfterMs: 0 };
  }

  /** One HTTP exchange on the outbound client: each phase under its own timer, the body bounded. */
  async #exchange(method: string, path: string, body: unknown, correlationId?: string): Promise<Exchange> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: "application/json" };
    if (correlationId !== undefined) headers[CORRELATION_HEADER] = headerSafe(correlationId);
    if (payload !== undefined) headers["content-type"] = "application/json";
    let res: OutboundResponse;
    try {
      res = await this.#http.request({ method, url: new URL(path, this.#base), headers, body: payload });
    } catch (error) {
      if (!outboundErrors.is(error)) throw error; // not a failed exchange: a bug
      return this.#lost(error);
    }
    const parsed = parseJson(res.body.toString("utf8"));
    return {
      kind: "answer",
      status: res.status,
      body: parsed,
      retryAfterMs: retryAfterOf(res.headers["retry-after"], parsed),
    };
  }

  /** A failed exchange: before the connection opened nothing was sent; after, the outcome is unknown. */
  #lost(error: CasebookError): Exchange {
    const reason = reasonOf(error);
    if (!mayHaveBeenProcessed(error)) return { kind: "not-sent", reason, retryAfterMs: 0 };
    return { kind: "no-answer", phase: phaseOf(error) as CallPhase, reason };
  }
}
