/**
 * The operator's API, behind PAYMENTS_ADMIN_TOKEN (bearer-auth's `createStaticTokenAuth`),
 * registered only when a token is configured:
 *
 *   POST   /v1/admin/merchants                          201: the merchant and its first API key (shown once)
 *   GET    /v1/admin/merchants/{id}/api-keys            its keys: prefix, createdAt, lastUsedAt, expiresAt, revokedAt
 *   POST   /v1/admin/merchants/{id}/api-keys            201: another key (shown once)
 *   POST   /v1/admin/merchants/{id}/api-keys/rotate     201: a new key; the others work `expiresInS` more
 *   DELETE /v1/admin/merchants/{id}/api-keys/{prefix}   204: that key stops working now
 *
 * The key routes are @casebook/infra/http/api-key-admin-routes, the same as webhooks'.
 * `casebook payments new-key` (src/tools/new-key.ts) calls these over HTTP.
 *
 * @example
 * await registerPaymentsAdminApi(service.app, { db, clock: systemClock, randomBytes, adminToken });
 */
import { issuedApiKeyView, registerApiKeyAdminRoutes } from "@casebook/infra/http/api-key-admin-routes";
import { bearerSecurity, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import { merchantErrors } from "../errors.ts";
import { MAX_MERCHANT_NAME_CHARS, MerchantRepository, merchantKeys } from "../store/merchant-repository.ts";

export interface PaymentsAdminOptions {
  db: Database;
  clock: Clock;
  /** Cryptographically secure in production (node:crypto `randomBytes`). */
  randomBytes: RandomBytes;
  /** PAYMENTS_ADMIN_TOKEN. */
  adminToken: string;
  /** After a key rotation or revocation: the API's cache of verified keys forgets them at once. */
  onKeysChanged?: () => void;
}

const tags = ["admin"];

const createMerchantBody = {
  type: "object",
  required: ["name"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$", description: "Default: mer_<24 hex>" },
    name: { type: "string", minLength: 1, maxLength: MAX_MERCHANT_NAME_CHARS },
  },
} as const;

const createdMerchantView = {
  type: "object",
  required: ["merchant", "apiKey"],
  properties: {
    merchant: {
      type: "object",
      required: ["id", "name", "createdAt"],
      properties: {
        id: { type: "string" },
        name: { type: "string" },
        createdAt: { type: "string", format: "date-time" },
      },
    },
    apiKey: issuedApiKeyView,
  },
} as const;

function registerMerchantRoutes(app: FastifyInstance, merchants: MerchantRepository): void {
  app.post<{ Body: { id?: string; name: string } }>(
    "/v1/admin/merchants",
    {
      schema: {
        summary: "Create a merchant and its first API key (shown once)",
        tags,
        security: bearerSecurity,
        body: createMerchantBody,
        response: { 201: createdMerchantView },
      },
    },
    async (request, reply) => {
      const { merchant, apiKey } = await merchants.create(request.body);
      return reply.code(201).send({
        merchant: { id: merchant.id, name: merchant.name, createdAt: merchant.createdAt.toISOString() },
        apiKey: { key: apiKey.key, prefix: apiKey.prefix },
      });
    },
  );
}

/** The admin scope: the operator's token on every request, then the merchant and key routes. */
export async function registerPaymentsAdminApi(
  app: FastifyInstance,
  options: PaymentsAdminOptions,
): Promise<void> {
  const { db, clock, randomBytes } = options;
  const merchants = new MerchantRepository(db, { clock, randomBytes });
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "payments", token: options.adminToken }));
    registerMerchantRoutes(scope, merchants);
    registerApiKeyAdminRoutes(scope, {
      owners: "merchants",
      keys: merchantKeys,
      db,
      clock,
      randomBytes,
      ownerNotFound: (id) => merchantErrors.create("PAYMENTS_MERCHANT_NOT_FOUND", { fields: { id } }),
      ownerNotFoundCode: "PAYMENTS_MERCHANT_NOT_FOUND",
      ...(options.onKeysChanged === undefined ? {} : { onKeysChanged: options.onKeysChanged }),
    });
  });
}
