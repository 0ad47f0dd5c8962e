/**
 * The operator's API, behind WEBHOOKS_ADMIN_TOKEN (register-api.ts, bearer-auth's `createStaticTokenAuth`); absent
 * when no token is configured:
 *
 *   POST   /v1/admin/tenants                          201: the tenant and its first API key (shown once)
 *   PATCH  /v1/admin/tenants/{id}                     its fair-scheduling weight (WH-15, WH-21)
 *   GET    /v1/admin/tenants/{id}/api-keys            its keys: prefix, createdAt, lastUsedAt, expiresAt, revokedAt
 *   POST   /v1/admin/tenants/{id}/api-keys            201: another key (shown once)
 *   POST   /v1/admin/tenants/{id}/api-keys/rotate     201: a new key; the others work `expiresInS` more
 *   DELETE /v1/admin/tenants/{id}/api-keys/{prefix}   204: that key stops working now
 *
 * The key routes are @casebook/infra/http/api-key-admin-routes, the same as payments'.
 *
 * New tenants get the service's retention settings unless the request names their own:
 * the retry window (WH-02, ≤ 24 h) and the payload retention (WH-22, ≥ the window).
 *
 * @example
 * await app.register(async (scope) => {
 *   scope.addHook("onRequest", createAdminAuth(config.adminToken));
 *   registerAdminRoutes(scope, { db, clock, randomBytes, tenantDefaults: { deliveryWindowS: 86_400, payloadRetentionS: 86_400 } });
 * });
 */
import { issuedApiKeyView, registerApiKeyAdminRoutes } from "@casebook/infra/http/api-key-admin-routes";
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import type { RandomBytes } from "../domain/store-ids.ts";
import { storeErrors } from "../errors.ts";
import {
  createTenant,
  getTenant,
  MAX_ATTEMPT_RETENTION_S,
  MAX_DELIVERY_WINDOW_S,
  MAX_PAYLOAD_RETENTION_S,
  MAX_TENANT_NAME_CHARS,
  MAX_TENANT_WEIGHT,
  MIN_ATTEMPT_RETENTION_S,
  type NewTenant,
  setTenantWeight,
  type Tenant,
  tenantKeys,
} from "../store/tenant-repository.ts";
import { idParams, instant } from "./api-schemas.ts";
import { withFieldPointers } from "./field-errors.ts";

export interface TenantDefaults {
  deliveryWindowS: number;
  payloadRetentionS: number;
}

export interface AdminContext {
  db: Database;
  clock: Clock;
  randomBytes: RandomBytes;
  tenantDefaults: TenantDefaults;
}

const tags = ["admin"];
const tenantView = {
  type: "object",
  required: [
    "id",
    "name",
    "weight",
    "deliveryWindowS",
    "payloadRetentionS",
    "attemptRetentionS",
    "createdAt",
  ],
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    weight: { type: "integer", description: "Share of delivery capacity under weighted fair scheduling" },
    deliveryWindowS: { type: "integer", description: "Retry window of each delivery (WH-02)" },
    payloadRetentionS: { type: "integer", description: "How long payloads are kept (WH-22)" },
    attemptRetentionS: { type: "integer" },
    createdAt: instant,
  },
} as const;

const createTenantBody = {
  type: "object",
  required: ["name"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$", description: "Default: ten_<32 hex>" },
    name: { type: "string", minLength: 1, maxLength: MAX_TENANT_NAME_CHARS },
    weight: { type: "integer", minimum: 1, maximum: MAX_TENANT_WEIGHT },
    deliveryWindowS: { type: "integer", minimum: 1, maximum: MAX_DELIVERY_WINDOW_S },
    payloadRetentionS: { type: "integer", minimum: 1, maximum: MAX_PAYLOAD_RETENTION_S },
    attemptRetentionS: {
      type: "integer",
      minimum: MIN_ATTEMPT_RETENTION_S,
      maximum: MAX_ATTEMPT_RETENTION_S,
    },
  },
} as const;

function toTenantJson(t: Tenant) {
  return {
    id: t.id,
    name: t.name,
    weight: t.weight,
    deliveryWindowS: t.deliveryWindowS,
    payloadRetentionS: t.payloadRetentionS,
    attemptRetentionS: t.attemptRetentionS,
    createdAt: t.createdAt.toISOString(),
  };
}

function tenantNotFound(tenantId: string): Error {
  return storeErrors.create("WEBHOOK_TENANT_NOT_FOUND", { fields: { tenantId } });
}

/** The service's retention defaults, kept consistent with a window the request sets itself. */
function withDefaults(body: NewTenant, defaults: TenantDefaults): NewTenant {
  const deliveryWindowS = body.deliveryWindowS ?? defaults.deliveryWindowS;
  const payloadRetentionS = body.payloadRetentionS ?? Math.max(defaults.payloadRetentionS, deliveryWindowS);
  return { ...body, deliveryWindowS, payloadRetentionS };
}

function registerTenantRoutes(app: FastifyInstance, context: AdminContext): void {
  app.post<{ Body: NewTenant }>(
    "/v1/admin/tenants",
    {
      schema: {
        errorCodes: ["WEBHOOK_TENANT_INVALID"],
        security: bearerSecurity,
        summary: "Create a tenant and its first API key (shown once)",
        tags,
        body: createTenantBody,
        response: {
          201: {
            type: "object",
            required: ["tenant", "apiKey"],
            properties: { tenant: tenantView, apiKey: issuedApiKeyView },
          },
        },
      },
    },
    async (request, reply) => {
      const input = withDefaults(request.body, context.tenantDefaults);
      const ctx = { nowMs: context.clock.nowMs(), randomBytes: context.randomBytes };
      const { tenant, apiKey } = await withFieldPointers("/body", () => createTenant(context.db, input, ctx));
      return reply
        .code(201)
        .send({ tenant: toTenantJson(tenant), apiKey: { key: apiKey.key, prefix: apiKey.prefix } });
    },
  );

  app.patch<{ Params: { id: string }; Body: { weight: number } }>(
    "/v1/admin/tenants/:id",
    {
      schema: {
        errorCodes: ["WEBHOOK_TENANT_NOT_FOUND", "WEBHOOK_TENANT_INVALID"],
        security: bearerSecurity,
        summary: "Change a tenant's fair-scheduling weight",
        tags,
        params: idParams,
        body: {
          type: "object",
          required: ["weight"],
          additionalProperties: false,
          properties: { weight: { type: "integer", minimum: 1, maximum: MAX_TENANT_WEIGHT } },
        },
        response: { 200: tenantView },
      },
    },
    async (request) => {
      const { id } = request.params;
      const changed = await withFieldPointers("/body", () =>
        setTenantWeight(context.db, id, request.body.weight),
      );
      const tenant = changed ? await getTenant(context.db, id) : undefined;
      if (!tenant) throw tenantNotFound(id);
      return toTenantJson(tenant);
    },
  );
}

/** The key routes are infra's, shared with payments: list, issue, rotate with overlap, revoke. */
function registerKeyRoutes(app: FastifyInstance, context: AdminContext): void {
  registerApiKeyAdminRoutes(app, {
    owners: "tenants",
    keys: tenantKeys,
    db: context.db,
    clock: context.clock,
    randomBytes: context.randomBytes,
    ownerNotFound: tenantNotFound,
    ownerNotFoundCode: "WEBHOOK_TENANT_NOT_FOUND",
  });
}

export function registerAdminRoutes(app: FastifyInstance, context: AdminContext): void {
  registerTenantRoutes(app, context);
  registerKeyRoutes(app, context);
}
