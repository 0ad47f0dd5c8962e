/**
 * Admission tokens (FS-13): kit's SignedTokens (HMAC-SHA256, key id for rotation, expiry),
 * carrying the sale, the user and a binding to the entrant's secret — the random secret the
 * join answered with once. A token only passes with that secret beside it, so a token copied
 * to another client (a bot farm sharing one admission) is refused as not yours.
 *
 * Entrants' secrets are kept as bindings (hashes) by the room port, beside their positions,
 * so any replica checks them (the in-process rooms, or Redis).
 *
 * @example
 * const admissions = new Admissions({ tokens });
 * const { secret, binding } = admissions.newSecret(); // the room keeps the first join's binding
 * const { token } = admissions.issue("s1", "u1", binding, ttlMs);
 * admissions.check(token, secret, "s1");               // "u1", or throws ADMISSION_*
 */
import { createHash, randomBytes } from "node:crypto";
import { kitErrors } from "@casebook/kit/kit-errors";
import type { SignedTokens } from "@casebook/kit/signed-token";
import { errors } from "../errors.ts";

export interface AdmissionData {
  /** sale */
  readonly s: string;
  /** user */
  readonly u: string;
  /** binding: a hash of the entrant's secret */
  readonly b: string;
}

/** What the room keeps of an entrant's secret, and what a token carries: a hash, never the secret. */
export function bindingOf(secret: string): string {
  return createHash("sha256").update(secret).digest("base64url").slice(0, 22);
}

export class Admissions {
  readonly #tokens: SignedTokens<AdmissionData>;

  constructor(options: { tokens: SignedTokens<AdmissionData> }) {
    this.#tokens = options.tokens;
  }

  /** A new entrant secret and its binding (the room keeps the binding of the first join only). */
  newSecret(): { secret: string; binding: string } {
    const secret = randomBytes(24).toString("base64url");
    return { secret, binding: bindingOf(secret) };
  }

  issue(
    saleId: string,
    user: string,
    binding: string,
    ttlMs: number,
  ): { token: string; expiresAtMs: number } {
    const token = this.#tokens.sign({ s: saleId, u: user, b: binding }, ttlMs);
    return { token, expiresAtMs: this.#tokens.verify(token).expiresAtMs };
  }
  /** The user a token admits to `saleId`, checked against the secret sent beside it. */
  check(token: string | undefined, secret: string | undefined, saleId: string): string {
    if (token === undefined)
      throw errors.create("ADMISSION_REQUIRED", { fields: { field: "/headers/authorization" } });
    let data: AdmissionData;
    try {
      data = this.#tokens.verify(token).data;
    } catch (error) {
      if (kitErrors.is(error)) {
        throw errors.create("ADMISSION_INVALID", {
          detail: error.message,
          fields: { reason: error.code },
          cause: error,
        });
      }
      throw error;
    }
    if (data.s !== saleId)
      throw errors.create("ADMISSION_NOT_YOURS", { detail: "the token admits to another sale" });
    if (secret === undefined || bindingOf(secret) !== data.b) {
      throw errors.create("ADMISSION_NOT_YOURS", {
        detail: "the token is bound to another entrant's secret (x-entrant-secret)",
        fields: { field: "/headers/x-entrant-secret" },
      });
    }
    return data.u;
  }
}
