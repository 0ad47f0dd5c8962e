/**
 * What one attempt's result means for its delivery (WH-01, WH-16, WH-18, WH-23), as a
 * pure function of the result, the delivery's progress and the clock:
 *
 * | result                             | class               | next                                  |
 * |------------------------------------|---------------------|---------------------------------------|
 * | 2xx, complete, before the deadline | 2xx                 | succeeded                             |
 * | 410 Gone                           | 410                 | failed; subscription disabled         |
 * | 429, 502, 503, 504                 | throttled           | retry after Retry-After (bounded)     |
 * | 3xx (not followed), 4xx            | 3xx, 4xx            | retry; quarantined when the endpoint's|
 * | resolves to a forbidden address    | address_refused     |   client errors persist (endpoint-    |
 * |                                    |                     |   health.ts: ≥ 5 in a row over ≥ 1 h) |
 * | 5xx, timeouts, connection errors,  | 5xx, timeout_…,     | retry until the deadline; never       |
 * | DNS failures (NXDOMAIN included)   | connection_error,   |   quarantined                         |
 * |                                    | dns_error           |                                       |
 * | a retry past the deadline or limit | —                   | expired                               |
 *
 * Persistent client errors end in quarantine instead of retrying for 24 h (convoy#1833: a
 * 403 retried forever); server-side and network trouble retries until the deadline, then
 * the delivery shows a terminal `expired` rather than a promise of later delivery (WH-23).
 * A DNS failure is not a client error: "no such name" is what a resolver outage, a lapsed
 * zone or a split-horizon mistake all look like from here, and the issue saw five of them
 * in 22 s quarantine an endpoint far inside the promised window. Whether client errors
 * persist is the ENDPOINT's streak (the store's, after this attempt), not this delivery's:
 * one event a receiver rejects forever expires alone; an endpoint that rejects everything
 * for an hour is quarantined.
 *
 * @example
 * const outcome = decideOutcome({ result: { kind: "response", status: 503, retryAfter: "30" },
 *   attempt: 1, clientErrorStreak: 0, endpoint: { clientErrors: 0, clientErrorsSinceMs: null },
 *   createdAtMs, nowMs, policy });
 * outcome.state;                  // "retrying"
 * outcome.throttleEndpointUntilMs; // nowMs + 30_000
 */
import {
  DEFAULT_QUARANTINE_BOUNDS,
  type EndpointStreak,
  healthSignal,
  isPersistentClientError,
  type QuarantineBounds,
} from "./endpoint-health.ts";
import { retryAfterMs } from "./retry-after.ts";
import type { RetryPolicy } from "./retry-policy.ts";

/** Phases of one HTTP attempt: each has its own timeout, and a log must say which one failed. */
export type SendPhase = "connect" | "headers" | "body";

export type AttemptResult =
  | { readonly kind: "response"; readonly status: number; readonly retryAfter?: string }
  | { readonly kind: "timeout"; readonly phase: SendPhase }
  | { readonly kind: "connection_error"; readonly phase: SendPhase; readonly code: string }
  | { readonly kind: "dns_error"; readonly code: string }
  | { readonly kind: "address_refused"; readonly addressClass: string };

export type ResponseClass =
  | "2xx"
  | "3xx"
  | "4xx"
  | "410"
  | "throttled"
  | "5xx"
  | "invalid_status"
  | "timeout_connect"
  | "timeout_headers"
  | "timeout_body"
  | "connection_error"
  | "dns_error"
  | "address_refused";

export type TerminalState = "succeeded" | "failed" | "expired" | "quarantined";
export type DeliveryState = "pending" | "retrying" | TerminalState;

export const TERMINAL_STATES: readonly TerminalState[] = ["succeeded", "failed", "expired", "quarantined"];

const THROTTLE_STATUSES = new Set([429, 502, 503, 504]);

export interface OutcomeInput {
  result: AttemptResult;
  /** This attempt's number, 1 for the first. */
  attempt: number;
  /** This delivery's client errors in a row before this attempt (kept on the delivery, for reading). */
  clientErrorStreak: number;
  /** The endpoint's client-error streak AFTER this attempt, as the store recorded it: what quarantines. */
  endpoint: EndpointStreak;
  createdAtMs: number;
  /** When the result arrived. */
  nowMs: number;
  policy: RetryPolicy;
  /** Default DEFAULT_QUARANTINE_BOUNDS (5 in a row over at least 1 h). */
  quarantine?: QuarantineBounds;
}

export interface DeliveryOutcome {
  readonly responseClass: ResponseClass;
  readonly state: "retrying" | TerminalState;
  readonly reason: string;
  readonly nextAttemptAtMs?: number;
  /** This delivery's client errors in a row after this attempt. */
  readonly clientErrorStreak: number;
  readonly subscriptionAction: "none" | "disable" | "quarantine";
  /** A throttling answer with Retry-After: hold every delivery to this endpoint until then. */
  readonly throttleEndpointUntilMs?: number;
}

/** The response class of a result, as recorded in Attempt.response_class (WH-08): [a-z0-9_]+. */
export function classify(result: AttemptResult): ResponseClass {
  switch (result.kind) {
    case "timeout":
      return `timeout_${result.phase}`;
    case "connection_error":
      return "connection_error";
    case "dns_error":
      return "dns_error";
    case "address_refused":
      return "address_refused";
    case "response":
      return classifyStatus(result.status);
  }
}

function classifyStatus(status: number): ResponseClass {
  if (!Number.isInteger(status) || status < 200 || status > 599) return "invalid_status";
  if (status < 300) return "2xx";
  if (status < 400) return "3xx";
  if (status === 410) return "410";
  if (THROTTLE_STATUSES.has(status)) return "throttled";
  return status < 500 ? "4xx" : "5xx";
}

/** Decides the delivery's next state after one attempt. */
export function decideOutcome(input: OutcomeInput): DeliveryOutcome {
  const responseClass = classify(input.result);
  const deadlineAtMs = input.policy.deadlineAtMs(input.createdAtMs);
  const base = { responseClass, clientErrorStreak: 0, subscriptionAction: "none" as const };
  if (responseClass === "2xx") {
    // WH-01: delivered means a 2xx BEFORE the deadline. A later one may well have been
    // processed (the receiver dedupes by id), but the contract's answer is expired.
    if (input.nowMs > deadlineAtMs) return { ...base, state: "expired", reason: "2xx after the deadline" };
    return { ...base, state: "succeeded", reason: "2xx" };
  }
  if (responseClass === "410") {
    return { ...base, state: "failed", reason: "410 Gone", subscriptionAction: "disable" };
  }
  // A refused address is a configuration error like a 4xx, and quarantines by the same
  // persistence rule rather than at once: the guard refuses before connecting, so a retry
  // sends nothing to the refused address, and a name that answered 127.0.0.1 for a few
  // minutes (a parked or misconfigured zone) does not cost the tenant its endpoint.
  const clientError = healthSignal(responseClass) === "client_error";
  const clientErrorStreak = clientError ? input.clientErrorStreak + 1 : 0;
  const bounds = input.quarantine ?? DEFAULT_QUARANTINE_BOUNDS;
  if (clientError && isPersistentClientError(input.endpoint, input.nowMs, bounds)) {
    const spanS = Math.floor((input.nowMs - input.endpoint.clientErrorsSinceMs!) / 1_000);
    const reason = `${input.endpoint.clientErrors} client errors in a row over ${spanS} s (last: ${responseClass})`;
    return { ...base, clientErrorStreak, state: "quarantined", reason, subscriptionAction: "quarantine" };
  }
  return retryOrExpire(input, { ...base, clientErrorStreak });
}

function retryOrExpire(
  input: OutcomeInput,
  base: Pick<DeliveryOutcome, "responseClass" | "clientErrorStreak" | "subscriptionAction">,
): DeliveryOutcome {
  const asked =
    input.result.kind === "response" && base.responseClass === "throttled"
      ? retryAfterMs(input.result.retryAfter, input.nowMs, input.policy.retryAfterMaxMs)
      : undefined;
  const decision = input.policy.next({
    attempt: input.attempt,
    nowMs: input.nowMs,
    createdAtMs: input.createdAtMs,
    retryAfterMs: asked,
  });
  const throttle = asked === undefined ? {} : { throttleEndpointUntilMs: input.nowMs + asked };
  if (!decision.retry) {
    return { ...base, ...throttle, state: "expired", reason: `${base.responseClass}; ${decision.reason}` };
  }
  return {
    ...base,
    ...throttle,
    state: "retrying",
    reason: base.responseClass,
    nextAttemptAtMs: decision.atMs,
  };
}

/**
 * The worker's check just before sending (WH-04, WH-18): a subscription deactivated
 * after the delivery was queued gets nothing, and nothing starts after the deadline.
 *
 * @example
 * const gate = beforeSend({ subscriptionActive: sub.active, createdAtMs, nowMs, policy });
 * if (!gate.send) return markTerminal(gate.state, gate.reason);
 */
export function beforeSend(input: {
  subscriptionActive: boolean;
  createdAtMs: number;
  nowMs: number;
  policy: RetryPolicy;
}): { send: true } | { send: false; state: "failed" | "expired"; reason: string } {
  if (!input.subscriptionActive) return { send: false, state: "failed", reason: "subscription inactive" };
  if (input.nowMs > input.policy.deadlineAtMs(input.createdAtMs)) {
    return { send: false, state: "expired", reason: "deadline passed before sending" };
  }
  return { send: true };
}
