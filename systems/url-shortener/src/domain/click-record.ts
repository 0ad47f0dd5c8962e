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
 * objects), `at` as ISO text, `clicks` the number of identical clicks each row stands for
 * (toClickColumns folds them), and the UTC days the batch touches (their partitions must exist).
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
  /** How many clicks each row stands for (≥ 1). */
  clicks: number[];
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
    clicks: [],
    daysMs: [],
  };
}

/** Appends one row to the columns: `record`, standing for `clicks` identical clicks (1 unless folded). */
export function pushClickRecord(columns: ClickColumns, record: ClickRecord, clicks = 1): void {
  columns.at.push(new Date(record.atMs).toISOString());
  columns.domain.push(record.domain);
  columns.code.push(record.code);
  columns.status.push(record.status);
  columns.referrerHost.push(record.referrerHost);
  columns.uaFamily.push(record.uaFamily);
  columns.bot.push(record.bot);
  columns.visitorHash.push(record.visitorHash);
  columns.orphan.push(record.orphan);
  columns.clicks.push(clicks);
  const dayMs = Math.floor(record.atMs / DAY_MS) * DAY_MS;
  if (!columns.daysMs.includes(dayMs)) columns.daysMs.push(dayMs);
}

/** Entries each memo of ClickEncoder keeps; when full it starts again empty (a bound, not an LRU). */
export const ENCODER_MEMO_ENTRIES = 10_000;

/** A memo that forgets everything once it holds `max` entries: bounded memory, O(1) per lookup. */
class BoundedMemo<V> {
  readonly #map = new Map<string, V>();
  readonly #max: number;
  constructor(max: number) {
    this.#max = max;
  }
  get(key: string, make: () => V): V {
    let value = this.#map.get(key);
    if (value === undefined) {
      value = make();
      if (this.#map.size >= this.#max) this.#map.clear();
      this.#map.set(key, value);
    }
    return value;
  }
}

/**
 * The flusher's encoding (issue 18): visits → click records → the store's rows, with two
 * savings that change no count and no field.
 *
 * - Memos: a user-agent's family, a referrer's host and a visitor's daily hash depend only on
 *   their strings (and the day), so each distinct one is computed once per ENCODER_MEMO_ENTRIES
 *   (HMAC and the user-agent patterns were most of the encoder's CPU).
 * - Folding: click records of one batch equal in every field — the same link, status,
 *   referrer host, user-agent family and visitor, within the same UTC second — become ONE row
 *   whose `clicks` says how many they are, its `at` the first one's time. Counts, distinct
 *   visitors and top referrers are sums over rows (store/click-store.ts), so they are the
 *   same as with a row per click; only the order of clicks within one second of one visitor
 *   on one link is not kept. A browser (or a load generator) hammering one link is one row a
 *   second, not thousands; distinct visitors are a row each, as before.
 *
 * @example
 * const encoder = new ClickEncoder(key);               // one per thread, reused across batches
 * const columns = encoder.encode(buffer.take(5_000)); // rows ≤ visits; sum(columns.clicks) = visits
 */
export class ClickEncoder {
  readonly #key: Uint8Array;
  readonly #families: BoundedMemo<UaFamily>;
  readonly #referrers: BoundedMemo<string | null>;
  readonly #visitors: BoundedMemo<string>;

  constructor(key: Uint8Array, memoEntries = ENCODER_MEMO_ENTRIES) {
    this.#key = key;
    this.#families = new BoundedMemo(memoEntries);
    this.#referrers = new BoundedMemo(memoEntries);
    this.#visitors = new BoundedMemo(memoEntries);
  }

  /** The record `visit` gives (what toClickRecord gives), through the memos. */
  record(visit: Visit): ClickRecord {
    const { atMs, ip, userAgent, referrer } = visit;
    const ua = userAgent ?? "";
    const uaFamily = this.#families.get(ua, () => uaFamilyOf(userAgent));
    const day = Math.floor(atMs / DAY_MS);
    return {
      atMs,
      domain: visit.domain,
      code: visit.code,
      status: visit.status,
      referrerHost:
        referrer === undefined || referrer === ""
          ? null
          : this.#referrers.get(referrer, () => referrerHostOf(referrer)),
      uaFamily,
      bot: uaFamily === "bot",
      visitorHash: this.#visitors.get(`${day}\n${ip}\n${ua}`, () =>
        visitorHash(this.#key, atMs, ip, userAgent),
      ),
      orphan: visit.status >= 400 || visit.code === "",
    };
  }

  /** A batch's rows: identical records of one second folded into one, in the order they first appear. */
  encode(visits: readonly Visit[]): ClickColumns {
    const columns = emptyClickColumns();
    const rowOf = new Map<string, number>();
    for (const visit of visits) {
      const record = this.record(visit);
      // Every field of the record (bot and orphan follow from the family, status and code) and
      // the second; the free-text fields length-prefixed, so no value can pass for another's.
      const { domain, code, referrerHost } = record;
      const host = referrerHost === null ? "-" : `${referrerHost.length}:${referrerHost}`;
      const fold = `${Math.floor(record.atMs / 1_000)} ${record.status} ${record.uaFamily} ${record.visitorHash} ${domain.length}:${domain}${code.length}:${code}${host}`;
      const clicks = visit.count ?? 1;
      const row = rowOf.get(fold);
      if (row === undefined) {
        rowOf.set(fold, columns.at.length);
        pushClickRecord(columns, record, clicks);
      } else {
        columns.clicks[row]! += clicks;
      }
    }
    return columns;
  }
}

/** Visits turned into the store's rows (ClickEncoder.encode with fresh memos): the flusher's whole encoding. */
export function toClickColumns(visits: readonly Visit[], key: Uint8Array): ClickColumns {
  return new ClickEncoder(key).encode(visits);
}
