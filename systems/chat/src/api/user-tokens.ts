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

export class UserTokens {
  readonly #secret: Uint8Array;

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
