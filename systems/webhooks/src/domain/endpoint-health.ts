/**
 * An endpoint's health, as its tenant sees it on the subscription (WH-16, WH-23):
 *
 * ```
 *            any failed attempt                 ≥ clientErrorsMin client errors in a row,
 *   active ───────────────────────▶ failing ─── the first ≥ spanMsMin ago ──▶ quarantined
 *     ▲                               │                                         │
 *     └────────── a 2xx ──────────────┘           410 Gone, or the tenant ──▶ disabled
 *                                                 (PATCH active: true brings either back)
 * ```
 *
 * Only CLIENT errors quarantine, and only when they persist: a 3xx, a 4xx, or a name that
 * resolves to an address the SSRF policy refuses says "this endpoint is configured wrong",
 * which more attempts will not fix — but a receiver mid-deploy answers 404 for minutes, so
 * a count alone (5 in ~22 s with a 2 s base) is no proof. Both bounds must hold: at least
 * `clientErrorsMin` in a row AND the first of them at least `spanMsMin` ago.
 *
 * Everything else — DNS failures (ENOTFOUND, EAI_AGAIN: a lapsed domain or a resolver
 * outage looks the same from here), refused/reset connections, timeouts, 5xx, 429 — is
 * the network or the receiver being down, which the retry window exists for: those retry
 * with the backoff until the deadline and end `expired` (WH-23), never quarantined. They
 * also break a client-error streak ("in a row" means consecutive attempts).
 *
 * The streak is the ENDPOINT's, not one delivery's: any 2xx to it resets the streak, so a
 * receiver rejecting one malformed event forever does not quarantine an endpoint that
 * accepts everything else (that delivery simply expires).
 *
 * @example
 * const signal = healthSignal("4xx");                                  // "client_error"
 * if (healthWriteNeeded(signal, plan.endpoint)) streak = await recordEndpointHealth(db, …);
 * isPersistentClientError({ clientErrors: 6, clientErrorsSinceMs: t0 }, t0 + 3_600_000); // true
 */

export type SubscriptionStatus = "active" | "failing" | "quarantined" | "disabled";
export const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = [
  "active",
  "failing",
  "quarantined",
  "disabled",
];

/** What one attempt says about its endpoint. */
export type HealthSignal = "success" | "client_error" | "transient_error";

export interface QuarantineBounds {
  /** Client errors in a row, at least. */
  readonly clientErrorsMin: number;
  /** Time from the first client error of the streak to the one that quarantines, at least, in ms. */
  readonly spanMsMin: number;
}

/**
 * 5 in a row over at least 1 h: past any deploy or misrouting blip, and still well inside
 * the 24 h window (WH-02), so a broken endpoint stops costing attempts after an hour
 * (about 20 attempts at the seed's backoff) instead of 24 h (convoy#1833).
 */
export const DEFAULT_QUARANTINE_BOUNDS: QuarantineBounds = Object.freeze({
  clientErrorsMin: 5,
  spanMsMin: 3_600_000,
});

/** The endpoint's client-error streak, as the store holds it after an attempt. */
export interface EndpointStreak {
  readonly clientErrors: number;
  /** When the streak's first client error arrived; null with no streak. */
  readonly clientErrorsSinceMs: number | null;
}

/** What the worker saw of the endpoint at its re-check: enough to skip writes that change nothing. */
export interface EndpointSeen {
  readonly status: SubscriptionStatus;
  readonly clientErrors: number;
}

// The receiver's configuration is wrong: the URL redirects (never followed), the request
// is refused, or the name points where the SSRF policy never connects.
const CLIENT_ERROR_CLASSES = new Set(["3xx", "4xx", "410", "address_refused"]);

/** The signal of a response class (delivery-outcome.ts `classify`). */
export function healthSignal(responseClass: string): HealthSignal {
  if (responseClass === "2xx") return "success";
  return CLIENT_ERROR_CLASSES.has(responseClass) ? "client_error" : "transient_error";
}

/**
 * Whether the attempt changes the endpoint's stored health. The common cases write
 * nothing: a 2xx to a healthy endpoint (every delivery of a busy endpoint would otherwise
 * update one hot row), and another transient failure of an endpoint already failing.
 */
export function healthWriteNeeded(signal: HealthSignal, seen: EndpointSeen): boolean {
  switch (signal) {
    case "success":
      return seen.status !== "active" || seen.clientErrors > 0;
    case "client_error":
      return true;
    case "transient_error":
      return seen.status === "active" || seen.clientErrors > 0;
  }
}

/** Whether the streak is persistent enough to quarantine the endpoint at `nowMs`. */
export function isPersistentClientError(
  streak: EndpointStreak,
  nowMs: number,
  bounds: QuarantineBounds = DEFAULT_QUARANTINE_BOUNDS,
): boolean {
  if (streak.clientErrors < bounds.clientErrorsMin || streak.clientErrorsSinceMs === null) return false;
  return nowMs - streak.clientErrorsSinceMs >= bounds.spanMsMin;
}

/** Checks a bounds object given by configuration or a test. */
export function checkQuarantineBounds(bounds: QuarantineBounds): QuarantineBounds {
  if (!Number.isSafeInteger(bounds.clientErrorsMin) || bounds.clientErrorsMin < 1)
    throw new RangeError(`clientErrorsMin must be an integer >= 1, got ${bounds.clientErrorsMin}`);
  if (!Number.isSafeInteger(bounds.spanMsMin) || bounds.spanMsMin < 0)
    throw new RangeError(`spanMsMin must be an integer >= 0, got ${bounds.spanMsMin}`);
  return bounds;
}
