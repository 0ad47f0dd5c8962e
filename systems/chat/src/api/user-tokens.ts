/**
 * User tokens (CH-15): JWTs (HS256, `jose`) naming a user and one of their devices, issued
 * by the send service to the app's backend (POST /v1/tokens, with the issuer token: the app
 * authenticates its users, chat trusts the app) and checked by the gateway at connect and by
 * the API on every call. A socket outlives a token: the client sends `{action:"refresh",
 * token}` with a fresh one before `expiresAt`, and a connection whose token lapses is closed
 * with 4001 (reconnect with a new token). The gateway's 2 h maximum lifetime is separate.
 *
 * @example
 * const tokens = new UserTokens(secret);
 * const { token } = await tokens.issue({ userId: "ana", deviceId: "phone", ttlS: 3_600, nowMs });
 * await tokens.verify(token, nowMs); // { userId: "ana", deviceId: "phone", expiresAtMs }
 */
import { jwtVerify, SignJWT } from "jose";
import { USER_ID_PATTERN } from "../domain/conversation.ts";

export const TOKEN_ISSUER = "casebook-chat";
export const TOKEN_AUDIENCE = "chat";
export const MAX_TOKEN_TTL_S = 24 * 3_600;
export const MIN_TOKEN_SECRET_BYTES = 32;

export interface UserIdentity {
  readonly userId: string;
  readonly deviceId: string;
  readonly expiresAtMs: number;
}

/**
 * Tokens whose signature was checked, remembered per process: the send service sees the same
 * token on every call of a socket's life, and an HMAC check through WebCrypto (with jose's
 * claim parsing) was a tenth of its time per send. A signature that verified once verifies
 * forever, so only the expiry is checked again on a hit; forged or malformed tokens are not
 * remembered. The oldest entry leaves when the map is full.
 */
export const MAX_VERIFIED_TOKENS = 20_000;

export class UserTokens {
  readonly #secret: Uint8Array;
  readonly #verified = new Map<string, UserIdentity>();

  constructor(secret: Uint8Array) {
    if (secret.length < MIN_TOKEN_SECRET_BYTES) {
      throw new RangeError(`the token secret needs at least ${MIN_TOKEN_SECRET_BYTES} bytes`);
    }
    this.#secret = secret;
  }

  async issue(input: { userId: string; deviceId: string; ttlS: number; nowMs: number }) {
    const iat = Math.floor(input.nowMs / 1_000);
    const exp = iat + input.ttlS;
    const token = await new SignJWT({ dev: input.deviceId })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(input.userId)
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.#secret);
    return { token, expiresAtMs: exp * 1_000 };
  }

  /** The identity a token carries, or undefined (malformed, forged, expired, wrong audience). */
  async verify(token: string, nowMs: number): Promise<UserIdentity | undefined> {
    const known = this.#verified.get(token);
    if (known !== undefined) return isExpired(known, nowMs) ? undefined : known;
    const identity = await this.#check(token, nowMs);
    if (identity !== undefined) {
      if (this.#verified.size >= MAX_VERIFIED_TOKENS) {
        const oldest = this.#verified.keys().next();
        if (!oldest.done) this.#verified.delete(oldest.value);
      }
      this.#verified.set(token, identity);
    }
    return identity;
  }

  async #check(token: string, nowMs: number): Promise<UserIdentity | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.#secret, {
        algorithms: ["HS256"],
        issuer: TOKEN_ISSUER,
        audience: TOKEN_AUDIENCE,
        currentDate: new Date(nowMs),
        requiredClaims: ["sub", "exp"],
      });
      const { sub, dev, exp } = payload;
      if (typeof sub !== "string" || !USER_ID_PATTERN.test(sub)) return undefined;
      if (typeof dev !== "string" || !USER_ID_PATTERN.test(dev)) return undefined;
      return { userId: sub, deviceId: dev, expiresAtMs: (exp as number) * 1_000 };
    } catch {
      return undefined;
    }
  }
}

/** jose's rule: expired once the current whole second reaches `exp` (no clock tolerance). */
function isExpired(identity: UserIdentity, nowMs: number): boolean {
  return Math.floor(nowMs / 1_000) >= identity.expiresAtMs / 1_000;
}
