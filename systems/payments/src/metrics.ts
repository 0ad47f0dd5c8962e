/**
 * The payments service's own metrics and log correlation (PY-17, issue 6 "Metrics"), on the
 * service's registry (`service.registry`, exposed at /metrics):
 *
 *   payments_saga_step_duration_seconds{step,outcome}      histogram: one saga step, call + commit
 *   payments_acquirer_calls_total{operation,outcome}       approved|declined|timeout|unavailable|error;
 *                                                          operation: authorize, query, capture, void,
 *                                                          refund, refund_query (PY-17 for refunds too)
 *   payments_acquirer_call_duration_seconds{operation}     histogram: one call, all its tries
 *   payments_acquirer_breaker_state                        0 closed, 1 half-open, 2 open (read at scrape)
 *   payments_saga_backlog                                  sagas due or in flight (bounded count, cached)
 *   payments_refund_retries_total{outcome}                 refund retry worker rounds: succeeded|failed|
 *                                                          retry|unresolved|error (unresolved: alarm)
 *   payments_reconciliation_open_exceptions                differences with the acquirer's D+1 file not yet
 *                                                          resolved (bounded count, cached): the last-line alarm
 *
 * Decline rate = rate(calls_total{operation="authorize",outcome="declined"}) / rate(calls_total{operation="authorize"});
 * timeout rate likewise with outcome="timeout". Labels are closed sets (never ids), so the
 * series count is bounded. Reconciliation stays the last-line alarm (alert on
 * payments_reconciliation_open_exceptions > 0): the others only say something looks wrong early.
 *
 * Correlation: a payment's correlation id is its idempotency key as the system knows it, scoped by
 * merchant — its acquirer key (`merchant:Idempotency-Key`; two merchants may send the same header
 * value, and the acquirer needs one key per payment across them all): the
 * orchestrator and the acquirer client log it on every line for the payment and send it as
 * `x-correlation-id`; `correlatePaymentRequests` puts it on the HTTP request's log lines. A refund's
 * is ITS acquirer key (`<payment's>:refund:<refund Idempotency-Key>`), set by the refund handler on
 * its request's lines and by the refund retry worker on every line and acquirer call.
 *
 * @example
 * const metrics = createPaymentMetrics(service.registry, {
 *   clock: systemClock,
 *   backlog: () => countSagaBacklog(db, // store/backlog-counts.ts
 *    { nowMs: systemClock.nowMs(), maxCount: 100_000 }),
 * });
 * const acquirer = new AcquirerClient({ baseUrl, clock, random, observer: metrics, log: service.log });
 * registerBreakerGauge(service.registry, () => acquirer.breaker.state);
 * new SagaOrchestrator({ ...options, observer: metrics, log: service.log });
 */
import { scrapedGauge } from "@casebook/infra/http/metrics";
import type { BreakerState } from "@casebook/kit/circuit-breaker";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { idempotencyKeyOf } from "./api/payment-request.ts";
import type { AcquirerCallObserver, AcquirerOperation } from "./clients/acquirer-client.ts";
import type { SagaStep } from "./domain/payment-saga.ts";
import { acquirerKeyOf } from "./store/payment-repository.ts";
import type { RefundRetryObserver, RefundRetryOutcome } from "./workers/refund-retrier.ts";
import type { SagaStepObserver } from "./workers/saga-orchestrator.ts";

export type AcquirerCallOutcome = "approved" | "declined" | "timeout" | "unavailable" | "error";

export interface PaymentMetricsOptions {
  clock: Clock;
  /** The acquirer breaker's state, read at each scrape. */
  breaker?: () => BreakerState;
  /** Counts the saga backlog; called at most once per `backlogCacheMs`, one call at a time. */
  backlog?: () => Promise<number>;
  /** How long a backlog count is reused across scrapes, in ms. Default 5000. */
  backlogCacheMs?: number;
  /** Counts the open reconciliation exceptions; cached like the backlog. */
  openExceptions?: () => Promise<number>;
  /** A failed backlog or exceptions count (the scrape keeps the last value). */
  onError?: (error: unknown) => void;
}

export type PaymentMetrics = AcquirerCallObserver & SagaStepObserver & RefundRetryObserver;

/** Seconds, 5 ms to 30 s: a fast acquirer answer up to a saga step that waited out a slow call. */
export const paymentDurationBucketsS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
export const DEFAULT_BACKLOG_CACHE_MS = 5_000;

const BREAKER_VALUES: Readonly<Record<BreakerState, number>> = { closed: 0, "half-open": 1, open: 2 };

/**
 * The counter's outcome for a client outcome kind. "unknown" (sent, no answer: a timeout or a
 * connection lost after sending) is "timeout": either way the saga must ask the acquirer.
 * Answers that did what was asked (captured, voided, refunded, a status found or not) are "approved".
 */
export function acquirerOutcomeLabel(kind: string): AcquirerCallOutcome {
  switch (kind) {
    case "approved":
    case "captured":
    case "voided":
    case "refunded":
    case "not-found":
      return "approved";
    case "declined":
      return "declined";
    case "unknown":
      return "timeout";
    case "unavailable":
      return "unavailable";
    default:
      return "error";
  }
}

/** Registers the payments metrics in `registry`; the result is the client's and orchestrator's observer. */
export function createPaymentMetrics(registry: Registry, options: PaymentMetricsOptions): PaymentMetrics {
  const stepDuration = new Histogram({
    name: "payments_saga_step_duration_seconds",
    help: "Duration of one saga step (acquirer call, decision and commit), by step and acquirer outcome kind",
    labelNames: ["step", "outcome"] as const,
    buckets: paymentDurationBucketsS,
    registers: [registry],
  });
  const calls = new Counter({
    name: "payments_acquirer_calls_total",
    help: "Acquirer calls by operation and outcome (approved, declined, timeout, unavailable, error)",
    labelNames: ["operation", "outcome"] as const,
    registers: [registry],
  });
  const callDuration = new Histogram({
    name: "payments_acquirer_call_duration_seconds",
    help: "Duration of one acquirer call, all its tries and waits included",
    labelNames: ["operation"] as const,
    buckets: paymentDurationBucketsS,
    registers: [registry],
  });
  const refundRetries = new Counter({
    name: "payments_refund_retries_total",
    help: "Refund retry worker rounds by how they ended (succeeded, failed, retry, unresolved, error)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  if (options.breaker !== undefined) registerBreakerGauge(registry, options.breaker);
  registerCachedCountGauge(registry, options, {
    name: "payments_saga_backlog",
    help: "Unfinished sagas due now or held by a worker (bounded count, cached a few seconds)",
    count: options.backlog,
  });
  registerCachedCountGauge(registry, options, {
    name: "payments_reconciliation_open_exceptions",
    help: "Differences with the acquirer's settlement file not yet resolved: the last-line alarm (bounded count, cached)",
    count: options.openExceptions,
  });
  return {
    refundRetried(outcome: RefundRetryOutcome) {
      refundRetries.inc({ outcome });
    },
    stepFinished(step: SagaStep, outcome: string, seconds: number) {
      stepDuration.observe({ step, outcome }, seconds);
    },
    callFinished(operation: AcquirerOperation, outcome: string, seconds: number) {
      calls.inc({ operation, outcome: acquirerOutcomeLabel(outcome) });
      callDuration.observe({ operation }, seconds);
    },
  };
}

/** `payments_acquirer_breaker_state`, read from `state` at each scrape (when the breaker is built after the metrics). */
export function registerBreakerGauge(registry: Registry, state: () => BreakerState): void {
  scrapedGauge(
    registry,
    "payments_acquirer_breaker_state",
    "The acquirer circuit breaker: 0 closed, 1 half-open, 2 open",
    () => BREAKER_VALUES[state()],
  );
}

/** A gauge set from `count` at scrape time, reusing a count for `backlogCacheMs`, one count at a time. */
function registerCachedCountGauge(
  registry: Registry,
  options: PaymentMetricsOptions,
  gauge: { name: string; help: string; count: (() => Promise<number>) | undefined },
): void {
  const count = gauge.count;
  if (count === undefined) return;
  const cacheMs = options.backlogCacheMs ?? DEFAULT_BACKLOG_CACHE_MS;
  let countedAtMs = Number.NEGATIVE_INFINITY;
  let inflight: Promise<void> | undefined;
  new Gauge({
    name: gauge.name,
    help: gauge.help,
    registers: [registry],
    collect() {
      if (options.clock.monotonicMs() - countedAtMs < cacheMs) return undefined;
      // Scrapes arriving together share one count; a failed count keeps the last value.
      inflight ??= count()
        .then((value) => {
          this.set(value);
          countedAtMs = options.clock.monotonicMs();
        })
        .catch((error: unknown) => options.onError?.(error))
        .finally(() => {
          inflight = undefined;
        });
      return inflight;
    },
  });
}

/**
 * An onRequest hook (after authentication) giving POST /v1/payments a child logger with
 * `correlationId` = the payment's acquirer key, so its request lines join the saga's.
 * A request without a valid Idempotency-Key keeps the plain logger (it is refused anyway).
 */
export function correlatePaymentRequests(merchantOf: (request: FastifyRequest) => string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.method !== "POST" || request.routeOptions.url !== "/v1/payments") return;
    let correlationId: string;
    try {
      correlationId = acquirerKeyOf(merchantOf(request), idempotencyKeyOf(request));
    } catch {
      return;
    }
    const log = request.log.child({ correlationId });
    request.log = log;
    reply.log = log;
  };
}
