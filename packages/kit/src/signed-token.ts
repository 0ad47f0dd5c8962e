/**
 * Signed expiring tokens with a key id, for rotation: a session cookie, an unsubscribe
 * link, a download URL — state the server hands out and must get back unforged. The
 * token is compact and URL-safe:
 *
 *     <kid>.<payload>.<signature>
 *
 * `payload` is base64url(JSON `{ iat, exp, data }`, times in epoch ms) and `signature` is
 * base64url(HMAC-SHA256(secret of kid, "<kid>.<payload>")): the key id is signed too, so
 * it cannot be swapped. The payload is readable by anyone holding the token: sign
 * nothing secret into it.
 *
 * Rotation: `keys` lists `{ kid, secret }`; the first key signs, every key verifies. To
 * rotate, put the new key first and keep the old one until the longest TTL has passed,
 * then drop it (its tokens then fail as TOKEN_UNKNOWN_KID).
 *
 * Verification checks, in order and each with its own error: the shape and size
 * (TOKEN_MALFORMED), the key id (TOKEN_UNKNOWN_KID), the signature, compared in constant
 * time (TOKEN_BAD_SIGNATURE), and only then — the payload is parsed only once it is known
 * to be ours — the expiry against the injected clock (TOKEN_EXPIRED). HMAC comes from
 * node:crypto: a pure computation, as in webhooks' `domain/signature.ts`.
 *
 * @example
 * const tokens = new SignedTokens<{ userId: string }>({
 *   clock: systemClock,
 *   keys: [{ kid: "2026-12", secret: newSecret }, { kid: "2026-06", secret: oldSecret }],
 * });
 * const token = tokens.sign({ userId: "u_1" }, 15 * 60_000); // valid 15 minutes
 * tokens.verify(token).data;                                  // { userId: "u_1" }, or throws TOKEN_*
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { assert } from "./assert.ts";
import type { Clock } from "./clock.ts";
import { kitErrors } from "./kit-errors.ts";

export interface SigningKey {
  /** Names the key inside the token: 1–64 characters of [A-Za-z0-9_-]. */
  readonly kid: string;
  /** At least 32 bytes (HMAC-SHA256's own strength); a string counts as its UTF-8 bytes. */
  readonly secret: Uint8Array | string;
}

export interface SignedTokensOptions {
  clock: Clock;
  /** The first key signs; all of them verify. Unique kids, at most MAX_KEYS. */
  keys: readonly SigningKey[];
  /** Longest lifetime `sign` accepts. Default 30 days. */
  maxTtlMs?: number;
  /** Longest token `verify` reads (larger is malformed before any work). Default 4,096. */
  maxTokenChars?: number;
}

export interface VerifiedToken<T> {
  readonly data: T;
  /** The key that signed it: a token of an old key can be re-issued under the new one. */
  readonly kid: string;
  readonly issuedAtMs: number;
  readonly expiresAtMs: number;
}

export const MIN_SECRET_BYTES = 32;
export const MAX_KEYS = 16;
export const DEFAULT_MAX_TTL_MS = 30 * 24 * 3_600_000;
export const DEFAULT_MAX_TOKEN_CHARS = 4_096;

const KID = /^[A-Za-z0-9_-]{1,64}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function encode(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString("base64url");
}

export class SignedTokens<T> {
  readonly #clock: Clock;
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly #signingKid: string;
  readonly #maxTtlMs: number;
  readonly #maxTokenChars: number;

  constructor(options: SignedTokensOptions) {
    const { keys } = options;
    if (keys.length < 1 || keys.length > MAX_KEYS) throw new RangeError(`keys must hold 1..${MAX_KEYS} keys`);
    const byKid = new Map<string, Buffer>();
    for (const { kid, secret } of keys) {
      if (!KID.test(kid)) throw new RangeError(`kid ${JSON.stringify(kid)} must be 1-64 of [A-Za-z0-9_-]`);
      if (byKid.has(kid)) throw new RangeError(`kid ${kid} appears twice`);
      const bytes = Buffer.from(secret);
      if (bytes.length < MIN_SECRET_BYTES)
        throw new RangeError(`the secret of kid ${kid} needs >= ${MIN_SECRET_BYTES} bytes`);
      byKid.set(kid, bytes);
    }
    this.#maxTtlMs = options.maxTtlMs ?? DEFAULT_MAX_TTL_MS;
    this.#maxTokenChars = options.maxTokenChars ?? DEFAULT_MAX_TOKEN_CHARS;
    if (!(Number.isSafeInteger(this.#maxTtlMs) && this.#maxTtlMs >= 1))
      throw new RangeError("maxTtlMs must be >= 1");
    if (!(Number.isSafeInteger(this.#maxTokenChars) && this.#maxTokenChars >= 64)) {
      throw new RangeError("maxTokenChars must be >= 64");
    }
    this.#clock = options.clock;
    this.#keys = byKid;
    this.#signingKid = keys[0]!.kid;
  }

  /** A token carrying `data` (JSON-serialisable) that expires `ttlMs` from now. */
  sign(data: T, ttlMs: number): string {
    if (!(Number.isSafeInteger(ttlMs) && ttlMs >= 1 && ttlMs <= this.#maxTtlMs)) {
      throw new RangeError(`ttlMs must be an integer in [1, ${this.#maxTtlMs}], got ${ttlMs}`);
    }
    const issuedAtMs = Math.floor(this.#clock.nowMs());
    const payload = encode(JSON.stringify({ iat: issuedAtMs, exp: issuedAtMs + ttlMs, data }));
    const signed = `${this.#signingKid}.${payload}`;
    const secret = this.#keys.get(this.#signingKid);
    assert(secret !== undefined, "the signing key is among the verifying keys");
    const token = `${signed}.${this.#signature(secret, signed)}`;
    if (token.length > this.#maxTokenChars) {
      throw new RangeError(`the token is ${token.length} chars, above maxTokenChars ${this.#maxTokenChars}`);
    }
    return token;
  }

  /** The token's contents if it is ours, intact and unexpired; throws TOKEN_* otherwise. */
  verify(token: string): VerifiedToken<T> {
    if (typeof token !== "string" || token.length > this.#maxTokenChars) throw malformed("size");
    const parts = token.split(".");
    if (
      parts.length !== 3 ||
      !KID.test(parts[0]!) ||
      !BASE64URL.test(parts[1]!) ||
      !BASE64URL.test(parts[2]!)
    ) {
      throw malformed("shape");
    }
    const [kid, payload, signature] = parts as [string, string, string];
    const secret = this.#keys.get(kid);
    if (secret === undefined) throw kitErrors.create("TOKEN_UNKNOWN_KID", { fields: { kid } });
    const expected = Buffer.from(this.#signature(secret, `${kid}.${payload}`));
    const offered = Buffer.from(signature);
    // Lengths are public (every signature has the same one); the bytes are compared in constant time.
    if (offered.length !== expected.length || !timingSafeEqual(offered, expected)) {
      throw kitErrors.create("TOKEN_BAD_SIGNATURE", { fields: { kid } });
    }
    const claims = parseClaims(payload);
    const nowMs = this.#clock.nowMs();
    if (!(nowMs < claims.exp)) {
      throw kitErrors.create("TOKEN_EXPIRED", { fields: { kid, expiresAtMs: claims.exp } });
    }
    return { data: claims.data as T, kid, issuedAtMs: claims.iat, expiresAtMs: claims.exp };
  }

  #signature(secret: Buffer, signed: string): string {
    return createHmac("sha256", secret).update(signed).digest("base64url");
  }
}

function malformed(reason: string): Error {
  return kitErrors.create("TOKEN_MALFORMED", { fields: { reason } });
}

/** A signed payload still gets checked: a key shared with an older format could have signed it. */
function parseClaims(payload: string): { iat: number; exp: number; data: unknown } {
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    throw malformed("payload");
  }
  if (typeof claims !== "object" || claims === null) throw malformed("payload");
  const { iat, exp, data } = claims as Record<string, unknown>;
  if (!Number.isSafeInteger(iat) || !Number.isSafeInteger(exp) || !("data" in claims))
    throw malformed("claims");
  return { iat: iat as number, exp: exp as number, data };
}
