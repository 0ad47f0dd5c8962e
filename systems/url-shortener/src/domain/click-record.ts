/**
 * A visit turned into the click record the append-only store keeps (US-15): time, domain,
 * code, status, the referrer's host, the user-agent family, bot or not, and a privacy-safe
 * visitor hash — HMAC(key, day ‖ ip ‖ user-agent), so one visitor is countable within a day
 * but not followable across days, and the address itself is never stored. Done by the
 * flusher, off the redirect path. Pure (the key and the visit are passed in).
 *
 * Orphan visits (an unknown code, a 404/410, or the base domain: code "") are kept apart, as Shlink does; bots are kept
 * but excluded from the counts (the rollup counts them in their own column).
 *
 * @example
 * toClickRecord(visit, key); // { atMs, domain, code, status, referrerHost: "news.example", uaFamily: "chrome", bot: false, visitorHash: "9f…", orphan: false }
 */
import { createHmac } from "node:crypto";
import type { Visit } from "./visit.ts";

export const UA_FAMILIES = ["bot", "edge", "chrome", "firefox", "safari", "other"] as const;
export type UaFamily = (typeof UA_FAMILIES)[number];

export interface ClickRecord {
  atMs: number;
  domain: string;
  code: string;
  status: number;
  referrerHost: string | null;
  uaFamily: UaFamily;
  bot: boolean;
  visitorHash: string;
  orphan: boolean;
}

/** Crawlers, previews, scripts and headless browsers: what an ad-hoc count must not include. */
const BOT_PATTERN =
  /bot|crawl|spider|slurp|facebookexternalhit|embedly|preview|curl\/|wget\/|python-requests|httpclient|headless|lighthouse|monitor/i;

export function uaFamilyOf(userAgent: string | undefined): UaFamily {
  if (userAgent === undefined || userAgent === "") return "other";
  if (BOT_PATTERN.test(userAgent)) return "bot";
  if (/Edg\//.test(userAgent)) return "edge";
  if (/Chrome\/|CriOS\//.test(userAgent)) return "chrome";
  if (/Firefox\/|FxiOS\//.test(userAgent)) return "firefox";
  if (/Safari\//.test(userAgent)) return "safari";
  return "other";
}

function referrerHostOf(referrer: string | undefined): string | null {
  if (referrer === undefined || referrer === "") return null;
  try {
    return new URL(referrer).hostname.slice(0, 253) || null;
  } catch {
    return null;
  }
}

export function visitorHash(
  key: Uint8Array,
  atMs: number,
  ip: string,
  userAgent: string | undefined,
): string {
  const day = Math.floor(atMs / 86_400_000);
  return createHmac("sha256", key)
    .update(`${day}\n${ip}\n${userAgent ?? ""}`)
    .digest("base64url")
    .slice(0, 22);
}

export function toClickRecord(visit: Visit, key: Uint8Array): ClickRecord {
  const uaFamily = uaFamilyOf(visit.userAgent);
  return {
    atMs: visit.atMs,
    domain: visit.domain,
    code: visit.code,
    status: visit.status,
    referrerHost: referrerHostOf(visit.referrer),
    uaFamily,
    bot: uaFamily === "bot",
    visitorHash: visitorHash(key, visit.atMs, visit.ip, visit.userAgent),
    orphan: visit.status >= 400 || visit.code === "",
  };
}
