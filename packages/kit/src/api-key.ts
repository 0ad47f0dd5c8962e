/**
 * API keys, the pure half: `<kind>_<16 hex>_<43 base64url>` (`sk_1f…_Qx…` in payments,
 * `whk_…` in webhooks). The prefix `<kind>_<16 hex>` is public — shown in listings to tell
 * keys apart, and the lookup key of the stored row — while only sha256(whole key) is stored,
 * so a copy of the table authenticates nobody. A presented key is found by its prefix and
 * its hash compared in constant time, so the response time says nothing about how much of a
 * guessed secret was right.
 *
 * The random bytes are injected (production: node:crypto's `randomBytes`), so this file does
 * no I/O and a test can pin a key. Never feed it a seeded, non-cryptographic source outside
 * tests. The storage half (the table, issue with a fresh prefix, authenticate, expire) is
 * `@casebook/infra/sql/api-key-table`; the HTTP half `@casebook/infra/http/bearer-auth`.
 *
 * @example
 * const keys = apiKeyScheme("sk");
 * const issued = keys.issue(randomBytes);    // { key: "sk_1f…_Qx…", prefix: "sk_1f…", hash: "9a…" }
 * const presented = keys.parse(issued.key);  // { prefix, hash }, or undefined when malformed
 * apiKeyMatches(presented!.hash, issued.hash); // true
 */
import { hash, timingSafeEqual } from "node:crypto";

/** Random bytes of the public id (16 hex chars): a collision only costs a retry (UNIQUE prefix). */
export const API_KEY_ID_BYTES = 8;
/** Random bytes of the secret: 256 bits, beyond any guessing. */
export const API_KEY_SECRET_BYTES = 32;
/** Characters of the secret: 32 bytes in unpadded base64url. */
export const API_KEY_SECRET_CHARS = 43;
/** A kind is a short lower-case word: it tells a reader (and a secret scanner) whose key it is. */
export const API_KEY_KIND_PATTERN = /^[a-z]{1,8}$/;
/** Length of a stored hash: sha256 as lowercase hex. */
export const API_KEY_HASH_CHARS = 64;

/** `size` cryptographically secure random bytes (node:crypto's `randomBytes` in production). */
export type RandomBytes = (size: number) => Uint8Array;

export interface IssuedApiKey {
  /** The whole key: shown once, to its owner, never stored. */
  key: string;
  /** Public part, stored and shown: identifies the key in listings and logs. */
  prefix: string;
  /** sha256 of the whole key, lowercase hex: what is stored. */
  hash: string;
}

export interface PresentedApiKey {
  prefix: string;
  hash: string;
}

/** The key format of one kind (`sk`, `whk`): issue, parse, and the patterns a table checks. */
export interface ApiKeyScheme {
  readonly kind: string;
  /** Length of every key of this kind: kind + `_` + 16 hex + `_` + 43 base64url. */
  readonly keyChars: number;
  /** The prefix as a PostgreSQL regex for a CHECK constraint: `^sk_[0-9a-f]{16}$`. */
  readonly prefixRegex: string;
  /** A fresh key from `randomBytes` (which must be cryptographically secure in production). */
  issue(randomBytes: RandomBytes): IssuedApiKey;
  /** The prefix and hash of a presented key, or undefined when it cannot be one of ours (no lookup needed). */
  parse(key: unknown): PresentedApiKey | undefined;
}

/** sha256 of a key, lowercase hex: the stored form (one-shot: no Hash object per request). */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

/**
 * Constant-time equality of two sha256 hex digests; false (never a throw) for anything that
 * is not two 32-byte digests.
 */
export function apiKeyMatches(presentedHash: string, storedHash: string): boolean {
  const presented = Buffer.from(presentedHash, "hex");
  const stored = Buffer.from(storedHash, "hex");
  // Both are 32 bytes when well-formed; a length check first keeps timingSafeEqual from throwing.
  return presented.length === 32 && stored.length === 32 && timingSafeEqual(presented, stored);
}

/**
 * The scheme of keys of `kind`; throws on a kind that is not 1–8 lower-case letters.
 *
 * @example
 * const webhookKeys = apiKeyScheme("whk");
 * webhookKeys.keyChars;    // 64
 * webhookKeys.prefixRegex; // "^whk_[0-9a-f]{16}$"
 */
export function apiKeyScheme(kind: string): ApiKeyScheme {
  if (!API_KEY_KIND_PATTERN.test(kind)) throw new RangeError(`api key kind ${kind} must be 1-8 of a-z`);
  const pattern = new RegExp(
    `^(${kind}_[0-9a-f]{${API_KEY_ID_BYTES * 2}})_[A-Za-z0-9_-]{${API_KEY_SECRET_CHARS}}$`,
  );
  const keyChars = kind.length + 1 + API_KEY_ID_BYTES * 2 + 1 + API_KEY_SECRET_CHARS;
  return {
    kind,
    keyChars,
    prefixRegex: `^${kind}_[0-9a-f]{${API_KEY_ID_BYTES * 2}}$`,
    issue(randomBytes) {
      const id = Buffer.from(randomBytes(API_KEY_ID_BYTES)).toString("hex");
      const secret = Buffer.from(randomBytes(API_KEY_SECRET_BYTES)).toString("base64url");
      const prefix = `${kind}_${id}`;
      const key = `${prefix}_${secret}`;
      if (!pattern.test(key)) throw new Error("api key: randomBytes returned the wrong number of bytes");
      return { key, prefix, hash: hashApiKey(key) };
    },
    parse(key) {
      // The length check first: a long guess is refused before the regex or the hash see it.
      if (typeof key !== "string" || key.length !== keyChars) return undefined;
      const match = pattern.exec(key);
      return match ? { prefix: match[1]!, hash: hashApiKey(key) } : undefined;
    },
  };
}
