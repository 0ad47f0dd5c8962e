/**
 * Admission tokens (FS-13): kit's SignedTokens (HMAC-SHA256, key id for rotation, expiry),
 * carrying the sale, the user and a binding to the entrant's secret — the random secret the
 * join answered with once. A token only passes with that secret beside it, so a token copied
 * to another client (a bot farm sharing one admission) is refused as not yours.
 *
 * Entrants' secrets are kept as hashes in this process, bounded (see RoomTicker: one replica
 * per sale's room for now).
 *
 * @example
 * const admissions = new Admissions({ tokens, maxEntrants: 1_000_000 });
 * const secret = admissions.enrol("s1", "u1");         // first join only
 * const token = admissions.issue("s1", "u1", ttlMs);
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

function bindingOf(secret: string): string {
  return createHash("sha256").update(secret).digest("base64url").slice(0, 22);
}

export class Admissions {
  readonly #tokens: SignedTokens<AdmissionData>;
  readonly #bindings = new Map<string, string>();
  readonly #maxEntrants: number;

  constructor(options: { tokens: SignedTokens<AdmissionData>; maxEntrants: number }) {
    this.#tokens = options.tokens;
    this.#maxEntrants = options.maxEntrants;
  }

  /** The entrant's secret on its first join; undefined when it joined before (or the book is full). */
  enrol(saleId: string, user: string): string | undefined {
    const key = `${saleId}\u0000${user}`;
    if (this.#bindings.has(key) || this.#bindings.size >= this.#maxEntrants) return undefined;
    const secret = randomBytes(24).toString("base64url");
    this.#bindings.set(key, bindingOf(secret));
    return secret;
  }

  /** Throws ENTRANT_SECRET_INVALID unless `secret` is the one this entrant got at join. */
  checkSecret(saleId: string, user: string, secret: string | undefined): void {
    const expected = this.#bindings.get(`${saleId}\u0000${user}`);
    if (expected === undefined) throw errors.create("ENTRANT_NOT_FOUND", { fields: { saleId, user } });
    if (secret === undefined || bindingOf(secret) !== expected) {
      throw errors.create("ENTRANT_SECRET_INVALID", { fields: { field: "/headers/x-entrant-secret" } });
    }
  }

  issue(saleId: string, user: string, ttlMs: number): { token: string; expiresAtMs: number } {
    const b = this.#bindings.get(`${saleId}\u0000${user}`);
    if (b === undefined) throw errors.create("ENTRANT_NOT_FOUND", { fields: { saleId, user } });
    const token = this.#tokens.sign({ s: saleId, u: user, b }, ttlMs);
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
