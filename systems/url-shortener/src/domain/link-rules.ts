/**
 * What a link may be, checked before anything is stored (issue 18: bad input → 4xx naming
 * the field, no coercion). Pure: the time of "now" is passed in.
 *
 * - `url`: an absolute http(s) URL (US-16: no `javascript:`, `data:`, `ftp:`…), at most
 *   MAX_TARGET_CHARS (a 10 kB URL is refused), with a host.
 * - `alias`: 3–64 of [A-Za-z0-9_-], and never 7 Base62 characters — that is the shape of the
 *   generated codes, which are stored without a collision check (US-05); an alias of that
 *   shape could take a code the counter will hand out later.
 * - `status`: 301, 302 (default, US-07), 307, 308.
 * - `cacheMaxAgeS`: 0..MAX_CACHE_MAX_AGE_S (default 300, US-08).
 * - `expiresAt`: in the future.
 * - `tags`: at most MAX_TAGS of [a-z0-9-]{1,32}, no duplicates.
 *
 * @example
 * checkTarget("example.com/a"); // throws LINK_INVALID { field: "url", reason: "… scheme …" }
 */
import { errors } from "../errors.ts";
import { CODE_LENGTH } from "./base62.ts";

export const MAX_TARGET_CHARS = 2_048;
export const REDIRECT_STATUSES = [301, 302, 307, 308] as const;
export type RedirectStatus = (typeof REDIRECT_STATUSES)[number];
export const DEFAULT_REDIRECT_STATUS: RedirectStatus = 302;
/** US-08: a 302 is cached only when the response says until when; five minutes by default. */
export const DEFAULT_CACHE_MAX_AGE_S = 300;
export const MAX_CACHE_MAX_AGE_S = 86_400;
export const MAX_TAGS = 10;
export const ALIAS_PATTERN = /^[A-Za-z0-9_-]{3,64}$/;
const GENERATED_SHAPE = new RegExp(`^[A-Za-z0-9]{${CODE_LENGTH}}$`);
const TAG_PATTERN = /^[a-z0-9-]{1,32}$/;
/** Codes a redirect may look up: aliases and generated codes; anything else is a 404 without a lookup. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{3,64}$/;

function invalid(field: string, reason: string): never {
  throw errors.create("LINK_INVALID", { detail: `${field}: ${reason}`, fields: { field, reason } });
}

/** The target as a URL: absolute, http(s), with a host, at most MAX_TARGET_CHARS. */
export function checkTarget(raw: string, field = "url"): URL {
  if (raw.length > MAX_TARGET_CHARS)
    invalid(field, `longer than ${MAX_TARGET_CHARS} characters (${raw.length})`);
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(raw)) invalid(field, "no scheme: write the absolute URL, https://…");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return invalid(field, "not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    invalid(field, `scheme ${url.protocol} is not allowed: only http and https`);
  }
  if (url.hostname === "") invalid(field, "no host");
  if (url.username !== "" || url.password !== "") invalid(field, "credentials in a URL are not allowed");
  return url;
}

export function checkAlias(alias: string): string {
  if (!ALIAS_PATTERN.test(alias)) invalid("alias", "use 3-64 of A-Z a-z 0-9 _ -");
  if (GENERATED_SHAPE.test(alias)) {
    invalid(
      "alias",
      `${CODE_LENGTH} letters and digits is the shape of generated codes; add a - or _ or change its length`,
    );
  }
  return alias;
}

export function checkExpiry(expiresAt: string, nowMs: number): Date {
  const date = new Date(expiresAt);
  if (Number.isNaN(date.getTime())) invalid("expiresAt", "not a date-time");
  if (date.getTime() <= nowMs) invalid("expiresAt", "in the past: a link must expire after it is made");
  return date;
}

export function checkTags(tags: readonly string[]): string[] {
  if (tags.length > MAX_TAGS) invalid("tags", `at most ${MAX_TAGS}`);
  for (const tag of tags)
    if (!TAG_PATTERN.test(tag)) invalid("tags", `tag ${JSON.stringify(tag)}: use 1-32 of a-z 0-9 -`);
  if (new Set(tags).size !== tags.length) invalid("tags", "a tag is listed twice");
  return [...tags];
}

export function isPermanent(status: RedirectStatus): boolean {
  return status === 301 || status === 308;
}
