/**
 * FS-14's proof of work at the API: challenges are kit SignedTokens (kid, expiry) naming the
 * sale and the user, so any replica checks them with no state; a join carries the challenge
 * and the nonce that solves it (domain/join-challenge.ts).
 *
 * @example
 * const challenges = new JoinChallenges({ tokens, bits: 12, ttlMs: 120_000 });
 * const c = challenges.issue("gig", "ana");
 * challenges.check("gig", "ana", c, solveChallenge(c, 12, sha256)); // or throws JOIN_CHALLENGE_*
 */
import { createHash } from "node:crypto";
import type { SignedTokens } from "@casebook/kit/signed-token";
import { hasLeadingZeroBits } from "../domain/join-challenge.ts";
import { errors } from "../errors.ts";

export interface ChallengeData {
  /** kind: never an admission token */
  readonly k: "pow";
  readonly s: string;
  readonly u: string;
}

export function sha256(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}

export class JoinChallenges {
  readonly #o: { tokens: SignedTokens<ChallengeData>; bits: number; ttlMs: number };

  constructor(options: { tokens: SignedTokens<ChallengeData>; bits: number; ttlMs: number }) {
    this.#o = options;
  }

  get bits(): number {
    return this.#o.bits;
  }

  issue(saleId: string, user: string): string {
    return this.#o.tokens.sign({ k: "pow", s: saleId, u: user }, this.#o.ttlMs);
  }

  check(saleId: string, user: string, challenge: string | undefined, nonce: string | undefined): void {
    if (challenge === undefined || nonce === undefined) {
      throw errors.create("JOIN_CHALLENGE_REQUIRED", {
        fields: { field: challenge === undefined ? "/body/challenge" : "/body/nonce", bits: this.#o.bits },
      });
    }
    let data: ChallengeData;
    try {
      data = this.#o.tokens.verify(challenge).data;
    } catch (error) {
      throw errors.create("JOIN_CHALLENGE_INVALID", { fields: { field: "/body/challenge" }, cause: error });
    }
    if (data.k !== "pow" || data.s !== saleId || data.u !== user) {
      throw errors.create("JOIN_CHALLENGE_INVALID", {
        detail: "the challenge was issued for another sale or user",
        fields: { field: "/body/challenge" },
      });
    }
    if (!hasLeadingZeroBits(sha256(`${challenge}:${nonce}`), this.#o.bits)) {
      throw errors.create("JOIN_CHALLENGE_INVALID", {
        detail: `the nonce does not give ${this.#o.bits} leading zero bits`,
        fields: { field: "/body/nonce" },
      });
    }
  }
}
