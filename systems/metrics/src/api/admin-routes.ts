/**
 * The operator's API, behind `METRICS_ADMIN_TOKEN` (registered only when it is set): create a
 * tenant with its cardinality ceilings (MT-16) and its first API key (shown once), and infra's
 * shared API-key routes for the tenants' keys (list, issue, rotate with overlap, revoke).
 *
 * @example
 * await registerAdminApi(app, { db, clock, randomBytes, tenants, adminToken });
 */
import { issuedApiKeyView, registerApiKeyAdminRoutes } from "@casebook/infra/http/api-key-admin-routes";
import { bearerSecurity, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import { type TenantRepository, tenantKeys } from "../store/tenant-repository.ts";

export interface AdminApiOptions {
  readonly db: Database;
  readonly clock: Clock;
  readonly randomBytes: RandomBytes;
  readonly tenants: TenantRepository;
  readonly adminToken: string;
  /** A key was rotated or revoked here: verified keys cached in this process are forgotten. */
  readonly onKeysChanged?: () => void;
}

const createTenantBody = {
  type: "object",
  required: ["id", "name"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$" },
    name: { type: "string", minLength: 1, maxLength: 200 },
    maxSeries: {
      type: "integer",
      minimum: 1,
      maximum: 100_000_000,
      description: "MT-16: series the tenant may hold",
    },
    maxSeriesPerMetric: {
      type: "integer",
      minimum: 1,
      maximum: 100_000_000,
      description: "MT-16: series per metric name",
    },
  },
} as const;

export async function registerAdminApi(app: FastifyInstance, options: AdminApiOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "metrics", token: options.adminToken }));
    scope.post<{ Body: { id: string; name: string; maxSeries?: number; maxSeriesPerMetric?: number } }>(
      "/v1/admin/tenants",
      {
        schema: {
          summary: "Create a tenant and its first API key (the key is shown only in this answer)",
          tags: ["admin"],
          security: bearerSecurity,
          errorCodes: ["METRICS_TENANT_EXISTS"],
          body: createTenantBody,
          response: {
            201: {
              type: "object",
              required: ["tenant", "apiKey"],
              properties: {
                tenant: {
                  type: "object",
                  required: ["id", "name"],
                  properties: { id: { type: "string" }, name: { type: "string" } },
                },
                apiKey: issuedApiKeyView,
              },
            },
          },
        },
      },
      async (request, reply) => {
        const created = await options.tenants.createIfAbsent(request.body);
        if (created === undefined)
          throw errors.create("METRICS_TENANT_EXISTS", { fields: { id: request.body.id } });
        return reply.code(201).send(created);
      },
    );
    registerApiKeyAdminRoutes(scope, {
      owners: "tenants",
      keys: tenantKeys,
      db: options.db,
      clock: options.clock,
      randomBytes: options.randomBytes,
      ownerNotFound: (id) => errors.create("METRICS_TENANT_NOT_FOUND", { fields: { id } }),
      ownerNotFoundCode: "METRICS_TENANT_NOT_FOUND",
      ...(options.onKeysChanged === undefined ? {} : { onKeysChanged: options.onKeysChanged }),
    });
  });
}
