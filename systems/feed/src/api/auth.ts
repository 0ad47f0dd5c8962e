/**
 * Who acts (issue 20): every write route, and the home feed, need `Authorization: Bearer
 * <fdk_… key>` (infra's bearer hook, run at onRequest so a stranger is refused before its
 * body is parsed: 401 AUTH_MISSING / AUTH_INVALID) and act as the key's user, who must be the
 * user in the path (403 FEED_FORBIDDEN naming `userId`, checked after the path is validated).
 * Author feeds stay public (FD-23).
 *
 * @example
 * const asUser = userGuard(createUserAuth((key) => userOfKey(db, key, clock.nowMs())));
 * app.post("/v1/users/:userId/posts", { ...asUser, schema: { security: bearerSecurity, ... } }, handler);
 */
import { type BearerAuth, createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { FastifyRequest } from "fastify";
import { errors } from "../errors.ts";

export type UserAuth = BearerAuth<bigint>;

/**
 * The bearer hook whose principal is the key's user id. `verify` is the store's check
 * (`userOfKey`), or the same through main's VerifiedKeyCache (`read`: a fresh key answers in the same turn).
 */
export function createUserAuth(
  verify: (key: string) => bigint | undefined | Promise<bigint | undefined>,
): UserAuth {
  return createBearerAuth({ realm: "feed", verify });
}

/** A route's hooks: authenticate (onRequest), then the key's user must be the path's `userId` (preHandler). */
export interface UserGuard {
  readonly onRequest: UserAuth["authenticate"];
  readonly preHandler: (request: FastifyRequest) => Promise<void>;
  /** The authenticated user of a request that went through `onRequest`. */
  userOf(request: FastifyRequest): bigint;
}

export function userGuard(auth: UserAuth): UserGuard {
  return {
    onRequest: auth.authenticate,
    userOf: (request) => auth.principalOf(request),
    preHandler: async (request) => {
      const { userId } = request.params as { userId: string };
      const principal = auth.principalOf(request);
      if (BigInt(userId) !== principal)
        throw errors.create("FEED_FORBIDDEN", {
          detail: `The key belongs to user ${principal}, not to user ${userId}.`,
          fields: { field: "userId" },
        });
    },
  };
}

/** The 401/403 codes every guarded route lists in /openapi.json. */
export const guardedErrorCodes = ["FEED_FORBIDDEN"] as const;
