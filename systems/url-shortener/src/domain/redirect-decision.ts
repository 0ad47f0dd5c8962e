/**
 * What `GET /{code}` answers, decided from the link as read by key (US-01, US-07, US-08, US-12):
 *
 *   no link ─────────────────────────────→ 404 (and an orphan visit)
 *   disabled by an admin ────────────────→ 410, never the stale target
 *   expired (expiresAt ≤ now) ───────────→ 410, never the stale target
 *   otherwise ───────────────────────────→ the link's 3xx, Location = target (+ the query, when forwarded),
 *                                          Cache-Control: max-age = min(link's lifetime, seconds left - 1),
 *                                          stale-if-error = what is left of its life after that
 *
 * The cache lifetime sent never exceeds the link's remaining life (US-12): a link expiring in
 * 40 s is cached 39 s at most by any edge or browser, whatever its max-age says. The second
 * taken off is the edge's clock: nginx counts whole seconds (`valid = now_s + max-age`, fresh
 * while `now_s <= valid`), so a whole-second lifetime could be served up to 0.999 s too long.
 * `stale-if-error` (RFC 5861) is how long past max-age an edge may serve the redirect while
 * the origin fails (US-10): the default `staleIfErrorS` for a link without expiry, and for
 * one with an expiry only the seconds left after max-age (less the same second) — so even an
 * edge cut off from the origin stops at the expiry. Pure.
 *
 * @example
 * decideRedirect(link, { nowMs, query: "utm=x", staleIfErrorS: 86_400 });
 * // { kind: "redirect", status: 302, location: "https://example.com/a?utm=x", maxAgeS: 300, staleIfErrorS: 86400 }
 */
import type { RedirectStatus } from "./link-rules.ts";

/** What the redirect needs of a link: the stored row's read-path columns. */
export interface ResolvedLink {
  readonly target: string;
  readonly status: RedirectStatus;
  readonly cacheMaxAgeS: number;
  readonly forwardQuery: boolean;
  readonly expiresAtMs: number | null;
  readonly disabled: boolean;
}

export type RedirectDecision =
  | { kind: "redirect"; status: RedirectStatus; location: string; maxAgeS: number; staleIfErrorS: number }
  | { kind: "gone"; reason: "expired" | "disabled" }
  | { kind: "not-found" };

/** The target with the request's query appended (the target's own parameters come first). */
export function forwardQuery(target: string, query: string): string {
  if (query === "") return target;
  const hash = target.indexOf("#");
  const base = hash === -1 ? target : target.slice(0, hash);
  const fragment = hash === -1 ? "" : target.slice(hash);
  const joiner = base.includes("?") ? (base.endsWith("?") || base.endsWith("&") ? "" : "&") : "?";
  return `${base}${joiner}${query}${fragment}`;
}

export function decideRedirect(
  link: ResolvedLink | undefined,
  request: { nowMs: number; query: string; staleIfErrorS?: number },
): RedirectDecision {
  if (link === undefined) return { kind: "not-found" };
  if (link.disabled) return { kind: "gone", reason: "disabled" };
  let maxAgeS = link.cacheMaxAgeS;
  let staleIfErrorS = request.staleIfErrorS ?? 0;
  if (link.expiresAtMs !== null) {
    const leftMs = link.expiresAtMs - request.nowMs;
    if (leftMs <= 0) return { kind: "gone", reason: "expired" };
    // Whole seconds, less the edge clock's second: never served past the expiry.
    const cachableS = Math.max(0, Math.floor(leftMs / 1_000) - 1);
    maxAgeS = Math.min(maxAgeS, cachableS);
    staleIfErrorS = Math.min(staleIfErrorS, cachableS - maxAgeS);
  }
  const location = link.forwardQuery ? forwardQuery(link.target, request.query) : link.target;
  return { kind: "redirect", status: link.status, location, maxAgeS, staleIfErrorS };
}

/** The redirect's Cache-Control: `max-age=300, stale-if-error=86400` (the second part only when > 0). */
export function cacheControlOf(decision: { maxAgeS: number; staleIfErrorS: number }): string {
  return decision.staleIfErrorS > 0
    ? `max-age=${decision.maxAgeS}, stale-if-error=${decision.staleIfErrorS}`
    : `max-age=${decision.maxAgeS}`;
}
