/**
 * Tenant API keys: `whk_<16 hex>_<43 base64url>`. The prefix `whk_<16 hex>` is public —
 * listed to tell keys apart, and the lookup key of the stored row — while only
 * sha256(whole key) is stored, so a copy of the table authenticates nobody. A presented
 * key is found by prefix and its hash compared in constant time, so timing says nothing
 * about how much of a guessed secret was right.
 *
 * @example
 * const issued = newTenantApiKey(randomBytes);   // { key, prefix, hash }
 * const presented = parseTenantApiKey(issued.key);
 * tenantApiKeyMatches(presented!.hash, issued.hash); // true
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { RandomBytes } from "./store-ids.ts";

/** Public id bytes (16 hex): a collision costs one retry against the UNIQUE prefix. */
export const API_KEY_ID_BYTES = 8;
/** Secret bytes: 256 bits, beyond guessing. */
export const API_KEY_SECRET_BYTES = 32;
const KEY_PATTERN = /^(whk_[0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;
/** `whk_` + 16 hex + `_` + 43 base64url characters. */
export const API_KEY_CHARS = 4 + API_KEY_ID_BYTES * 2 + 1 + 43;

export interface IssuedTenantApiKey {
  /** The whole key: shown once to the tenant, never stored. */
  key: string;
  /** Public part: stored, shown in listings and logs. */
  prefix: string;
  /** sha256 of the whole key, lowercase hex: what is stored. */
  hash: string;
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A fresh key; `randomBytes` must be cryptographically secure outside tests. */
export function newTenantApiKey(randomBytes: RandomBytes): IssuedTenantApiKey {
  const id = Buffer.from(randomBytes(API_KEY_ID_BYTES)).toString("hex");
  const secret = Buffer.from(randomBytes(API_KEY_SECRET_BYTES)).toString("base64url");
  const prefix = `whk_${id}`;
  const key = `${prefix}_${secret}`;
  if (!KEY_PATTERN.test(key)) throw new Error("api key: randomBytes returned the wrong number of bytes");
  return { key, prefix, hash: sha256Hex(key) };
}

/** The prefix and hash of a presented key, or undefined when it cannot be one of ours (no lookup needed). */
export function parseTenantApiKey(key: unknown): { prefix: string; hash: string } | undefined {
  if (typeof key !== "string" || key.length !== API_KEY_CHARS) return undefined;
  const match = KEY_PATTERN.exec(key);
  return match ? { prefix: match[1]!, hash: sha256Hex(key) } : undefined;
}

/** Constant-time equality of two sha256 hex digests. */
export function tenantApiKeyMatches(presentedHash: string, storedHash: string): boolean {
  const presented = Buffer.from(presentedHash, "hex");
  const stored = Buffer.from(storedHash, "hex");
  // Equal lengths first: timingSafeEqual throws on a length mismatch.
  return presented.length === 32 && stored.length === 32 && timingSafeEqual(presented, stored);
}
