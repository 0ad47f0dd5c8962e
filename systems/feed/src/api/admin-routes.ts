/**
 * The operator's API, behind FEED_ADMIN_TOKEN (infra's `createStaticTokenAuth`), registered
 * only when a token is configured:
 *
 *   POST /v1/admin/users                       201: the user (made if new) and a fresh API key (shown once)
 *   GET|POST|DELETE /v1/admin/users/{id}/api-keys[...]   infra's api-key-admin-routes (list, issue, rotate, revoke)
 *
 * `casebook feed new-key` (src/tools/new-key.ts) calls these over HTTP.
 *
 * @example
 * await registerAdminApi(app, { db, clock, randomBytes, adminToken });
 */
import { issuedApiKeyView, registerApiKeyAdminRoutes } from "@casebook/infra/http/api-key-admin-routes";
import { bearerSecurity, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import { createUserWithKey, userKeys } from "../store/user-keys.ts";
import { userIdSchema } from "./feed-schemas.ts";

export interface AdminOptions {
  db: Database;
  clock: Clock;
  randomBytes: RandomBytes;
  adminToken: string;
  /** Told after a rotation or revocation succeeded: a cache of verified keys forgets them. */
  onKeysChanged?: () => void;
}

const createUserBody = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  properties: {
    id: userIdSchema,
    // The shared new-key tool sends a name with every owner it makes; users have none here.
    name: { type: "string", maxLength: 200, description: "Ignored: feed users have no name" },
  },
} as const;

const createdUserView = {
  type: "object",
  required: ["user", "created", "apiKey"],
  properties: {
    user: { type: "object", required: ["id"], properties: { id: { type: "string" } } },
    created: { type: "boolean", description: "false: the user existed; it got another key" },
    apiKey: issuedApiKeyView,
  },
} as const;

/** The admin scope: the operator's token on every request, then users and their keys. */
export async function registerAdminApi(app: FastifyInstance, o: AdminOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "feed", token: o.adminToken }));
    scope.post<{ Body: { id: string; name?: string } }>(
      "/v1/admin/users",
      {
        schema: {
          summary: "A user (made if new) and a fresh API key for it (shown once)",
          tags: ["admin"],
          security: bearerSecurity,
          body: createUserBody,
          response: { 201: createdUserView },
        },
      },
      async (request, reply) => {
        const made = await createUserWithKey(o.db, BigInt(request.body.id), {
          nowMs: o.clock.nowMs(),
          randomBytes: o.randomBytes,
        });
        return reply.code(201).send({
          user: { id: request.body.id },
          created: made.created,
          apiKey: { key: made.apiKey.key, prefix: made.apiKey.prefix },
        });
      },
    );
    registerApiKeyAdminRoutes(scope, {
      owners: "users",
      keys: userKeys,
      db: o.db,
      clock: o.clock,
      randomBytes: o.randomBytes,
      ownerNotFound: (id) => errors.create("USER_NOT_FOUND", { fields: { field: "id", id } }),
      ownerNotFoundCode: "USER_NOT_FOUND",
      // int8 ids up to 2^63 − 1 exactly: no id reaches the database as an error.
      ownerIdPattern: userIdSchema.pattern,
      // A revoked key stops working at once in this process, not a cache TTL later (only a
      // rotation or revocation that succeeded clears it: a stranger's refusals do not).
      ...(o.onKeysChanged === undefined ? {} : { onKeysChanged: o.onKeysChanged }),
    });
  });
}
