/**
 * What `GET /{code}` answers, decided from the link as read by key (US-01, US-07, US-08, US-12):
 *
 *   no link ─────────────────────────────→ 404 (and an orphan visit)
 *   disabled by an admin ────────────────→ 410, never the stale target
 *   expired (expiresAt ≤ now) ───────────→ 410, never the stale target
 *   otherwise ───────────────────────────→ the link's 3xx, Location = target (+ the query, when forwarded),
 *                                          Cache-Control: max-age = min(link's lifetime, seconds left)
 *
 * The cache lifetime sent never exceeds the link's remaining life (US-12): a link expiring in
 * 40 s is cached 40 s at most by any edge or browser, whatever its max-age says. Pure.
 *
 * @example
 * decideRedirect(link, { nowMs, query: "utm=x" });
 * // { kind: "redirect", status: 302, location: "https://example.com/a?utm=x", maxAgeS: 300 }
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
  | { kind: "redirect"; status: RedirectStatus; location: string; maxAgeS: number }
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
  request: { nowMs: number; query: string },
): RedirectDecision {
  if (link === undefined) return { kind: "not-found" };
  if (link.disabled) return { kind: "gone", reason: "disabled" };
  let maxAgeS = link.cacheMaxAgeS;
  if (link.expiresAtMs !== null) {
    const leftMs = link.expiresAtMs - request.nowMs;
    if (leftMs <= 0) return { kind: "gone", reason: "expired" };
    // Floor: a cache may keep it for whole seconds only, and never past the expiry.
    maxAgeS = Math.min(maxAgeS, Math.floor(leftMs / 1_000));
  }
  const location = link.forwardQuery ? forwardQuery(link.target, request.query) : link.target;
  return { kind: "redirect", status: link.status, location, maxAgeS };
}
