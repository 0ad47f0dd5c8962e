/**
 * RL-15 response headers for a limiter decision:
 *
 * - `Retry-After` in whole seconds, rounded UP and at least 1, on a 429 and on a
 *   fail-closed 503 (RL-12): a client retrying early would only be refused again.
 * - `RateLimit-Policy` and `RateLimit` as in draft-ietf-httpapi-ratelimit-headers-11:
 *   Structured-Field lists of String items with parameters, e.g.
 *   `RateLimit-Policy: "per-user";q=100;w=60` (quota, window in seconds) and
 *   `RateLimit: "per-user";r=42;t=12` (remaining quota, seconds of the effective
 *   window). For a refused limit `t` is the Retry-After, so Retry-After never points
 *   before the end of that policy's effective window (draft §6). The optional
 *   partition key `pk` is not sent: our keys may carry user ids.
 * - The de-facto `X-RateLimit-Limit/Remaining/Reset` trio, for the one most
 *   restrictive limit (the refusing one, else the one with the least remaining);
 *   Reset in delta seconds by default (no clock sync needed), epoch seconds on request.
 *
 * Shadow limits are never advertised: they observe, they do not limit.
 *
 * @example
 * rateLimitHeaders({
 *   outcome: "limited",
 *   limits: [{ policy: "per-user", quota: 5, windowS: 10, remaining: 0, resetMs: 9_000, refused: true, retryAfterMs: 1_461 }],
 * });
 * // { "Retry-After": "2", "RateLimit-Policy": "\"per-user\";q=5;w=10", "RateLimit": "\"per-user\";r=0;t=2",
 * //   "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "2" }
 */

/** The state of one limit after a decision. */
export interface LimitStatus {
  /** Policy name: the RateLimit-Policy identifier. */
  readonly policy: string;
  /** The policy's quota (`q`): the whole policy's, also for a sub-bucketed one. */
  readonly quota: number;
  /** The policy's window in seconds (`w`). */
  readonly windowS: number;
  /** Quota units left (`r`), floored at 0. */
  readonly remaining: number;
  /** ms until the limit is fully reset (`t` when not refused). */
  readonly resetMs: number;
  /** True when THIS limit refused the request. */
  readonly refused?: boolean;
  /** When refused: ms until the request could pass. */
  readonly retryAfterMs?: number;
  /** Observe-only limits are left out of every header. */
  readonly shadow?: boolean;
}

export type HeaderDecision =
  | { readonly outcome: "allowed"; readonly limits: readonly LimitStatus[] }
  /** 429: `retryAfterMs` defaults to the largest among refusing limits. */
  | { readonly outcome: "limited"; readonly limits: readonly LimitStatus[]; readonly retryAfterMs?: number }
  /** Fail-closed 503: the limiter is down; `policies` (static, from config) may still be advertised. */
  | {
      readonly outcome: "unavailable";
      readonly retryAfterMs: number;
      readonly policies?: readonly Pick<LimitStatus, "policy" | "quota" | "windowS">[];
    };

export interface HeaderOptions {
  /** Emit RateLimit-Policy / RateLimit (default true). */
  readonly draft?: boolean;
  /** Emit X-RateLimit-Limit / Remaining / Reset (default true). */
  readonly legacy?: boolean;
  /** X-RateLimit-Reset as seconds from now (default) or Unix epoch seconds (needs `nowMs`). */
  readonly resetStyle?: "delta-seconds" | "epoch-seconds";
  /** Wall-clock now for epoch-seconds, from the injected Clock. */
  readonly nowMs?: number;
}

/**
 * Milliseconds to a Retry-After value: whole seconds rounded UP, at least 1.
 *
 * @example
 * retryAfterSeconds(1_461); // 2
 * retryAfterSeconds(0);     // 1
 */
export function retryAfterSeconds(ms: number): number {
  if (!Number.isFinite(ms)) throw new RangeError(`retryAfterMs must be finite, got ${ms}`);
  return Math.max(1, Math.ceil(ms / 1_000));
}

/**
 * A Structured-Field String (RFC 9651 §3.3.3): quoted, `\` and `"` escaped; only
 * printable ASCII is representable.
 *
 * @example
 * sfString('a"b'); // "\"a\\\"b\""
 */
export function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value))
    throw new RangeError(`not representable as a structured-field string: ${value}`);
  return `"${value.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
}

function sfInteger(value: number): string {
  // RFC 9651 Integers have at most 15 digits.
  const n = Math.max(0, Math.floor(value));
  if (n > 999_999_999_999_999) throw new RangeError(`integer too large for a structured field: ${value}`);
  return String(n);
}

function policyItem(limit: Pick<LimitStatus, "policy" | "quota" | "windowS">): string {
  return `${sfString(limit.policy)};q=${sfInteger(limit.quota)};w=${sfInteger(Math.max(1, limit.windowS))}`;
}

function effectiveWindowS(limit: LimitStatus): number {
  if (limit.refused) return retryAfterSeconds(limit.retryAfterMs ?? limit.resetMs);
  return Math.max(0, Math.ceil(limit.resetMs / 1_000));
}

/**
 * The limit that speaks for a decision (the X-RateLimit trio, Envoy's status): the
 * refusing one with the longest wait, else the one with the least remaining.
 *
 * @example
 * mostRestrictive(result.limits)?.policy; // "user-payments"
 */
export function mostRestrictive(limits: readonly LimitStatus[]): LimitStatus | undefined {
  let best: LimitStatus | undefined;
  for (const limit of limits) {
    if (!best) best = limit;
    else if (Boolean(limit.refused) !== Boolean(best.refused)) best = limit.refused ? limit : best;
    else if (limit.refused) best = (limit.retryAfterMs ?? 0) > (best.retryAfterMs ?? 0) ? limit : best;
    else if (limit.remaining < best.remaining) best = limit;
  }
  return best;
}

function legacyHeaders(limit: LimitStatus, options: HeaderOptions): Record<string, string> {
  const resetS = effectiveWindowS(limit);
  let reset = resetS;
  if (options.resetStyle === "epoch-seconds") {
    if (options.nowMs === undefined)
      throw new TypeError("resetStyle epoch-seconds needs nowMs from the injected clock");
    reset = Math.ceil(options.nowMs / 1_000) + resetS;
  }
  return {
    "X-RateLimit-Limit": sfInteger(limit.quota),
    "X-RateLimit-Remaining": sfInteger(limit.remaining),
    "X-RateLimit-Reset": sfInteger(reset),
  };
}

/**
 * The response headers for `decision` (header name → value).
 *
 * @example
 * const headers = rateLimitHeaders({ outcome: "unavailable", retryAfterMs: 5_000 });
 * // { "Retry-After": "5" }
 */
export function rateLimitHeaders(
  decision: HeaderDecision,
  options: HeaderOptions = {},
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (decision.outcome === "unavailable") {
    headers["Retry-After"] = String(retryAfterSeconds(decision.retryAfterMs));
    const policies = decision.policies ?? [];
    if (options.draft !== false && policies.length > 0)
      headers["RateLimit-Policy"] = policies.map(policyItem).join(", ");
    return headers;
  }
  const limits = decision.limits.filter((l) => l.shadow !== true);
  if (decision.outcome === "limited") {
    const refusing = limits.filter((l) => l.refused);
    const waitMs = decision.retryAfterMs ?? Math.max(0, ...refusing.map((l) => l.retryAfterMs ?? l.resetMs));
    headers["Retry-After"] = String(retryAfterSeconds(waitMs));
  }
  if (limits.length === 0) return headers;
  if (options.draft !== false) {
    headers["RateLimit-Policy"] = limits.map(policyItem).join(", ");
    headers.RateLimit = limits
      .map((l) => `${sfString(l.policy)};r=${sfInteger(l.remaining)};t=${sfInteger(effectiveWindowS(l))}`)
      .join(", ");
  }
  const primary = mostRestrictive(limits);
  if (options.legacy !== false && primary) Object.assign(headers, legacyHeaders(primary, options));
  return headers;
}
