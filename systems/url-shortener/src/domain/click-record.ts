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
import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
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

/** The key imported once: HMAC over raw key bytes imports them again per call (a third of its cost in the profile). */
const importedKeys = new WeakMap<Uint8Array, KeyObject>();
function keyObjectOf(key: Uint8Array): KeyObject {
  let imported = importedKeys.get(key);
  if (imported === undefined) {
    imported = createSecretKey(key);
    importedKeys.set(key, imported);
  }
  return imported;
}

export function visitorHash(
  key: Uint8Array,
  atMs: number,
  ip: string,
  userAgent: string | undefined,
): string {
  const day = Math.floor(atMs / 86_400_000);
  return createHmac("sha256", keyObjectOf(key))
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

/**
 * A batch of click records as the store's INSERT takes them: one array per column (a batch
 * crosses from the encoder's worker thread as a few arrays of strings, not thousands of
 * objects), `at` as ISO text, and the UTC days the batch touches (their partitions must exist).
 */
export interface ClickColumns {
  at: string[];
  domain: string[];
  code: string[];
  status: number[];
  referrerHost: (string | null)[];
  uaFamily: UaFamily[];
  bot: boolean[];
  visitorHash: string[];
  orphan: boolean[];
  /** The start (ms) of each UTC day some record falls on, each once. */
  daysMs: number[];
}

const DAY_MS = 86_400_000;

export function emptyClickColumns(): ClickColumns {
  return {
    at: [],
    domain: [],
    code: [],
    status: [],
    referrerHost: [],
    uaFamily: [],
    bot: [],
    visitorHash: [],
    orphan: [],
    daysMs: [],
  };
}

/** Appends one record to the columns. */
export function pushClickRecord(columns: ClickColumns, record: ClickRecord): void {
  columns.at.push(new Date(record.atMs).toISOString());
  columns.domain.push(record.domain);
  columns.code.push(record.code);
  columns.status.push(record.status);
  columns.referrerHost.push(record.referrerHost);
  columns.uaFamily.push(record.uaFamily);
  columns.bot.push(record.bot);
  columns.visitorHash.push(record.visitorHash);
  columns.orphan.push(record.orphan);
  const dayMs = Math.floor(record.atMs / DAY_MS) * DAY_MS;
  if (!columns.daysMs.includes(dayMs)) columns.daysMs.push(dayMs);
}

/** Visits turned into the store's columns: the flusher's whole encoding, run on the encoder's thread. */
export function toClickColumns(visits: readonly Visit[], key: Uint8Array): ClickColumns {
  const columns = emptyClickColumns();
  for (const visit of visits) pushClickRecord(columns, toClickRecord(visit, key));
  return columns;
}
