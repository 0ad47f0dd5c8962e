/**
 * The operator's API, behind `LLM_GATEWAY_ADMIN_TOKEN` (registered only when it is set):
 * create a tenant with its quota (RPM, TPM) and its first API key (shown once), read a tenant's
 * settings and change them (`PATCH`: only the fields given; `spendLimitUsd: null` removes the
 * money budget), infra's shared API-key routes for the tenants' keys (list, issue, rotate with
 * overlap, revoke), and the destinations' breaker states (LG-08). A change made here clears this
 * replica's key cache at once (its entries carry the tenant's quota); other replicas see it
 * within their cache's TTL (LG-14).
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
import type { Destinations } from "../clients/destinations.ts";
import { errors } from "../errors.ts";
import { type TenantRepository, type TenantSettings, tenantKeys } from "../store/tenant-repository.ts";
import type { UsageLedger } from "../store/usage-writer.ts";
import { registerAdminUsageRoute } from "./usage-routes.ts";

export interface AdminApiOptions {
  readonly db: Database;
  readonly clock: Clock;
  readonly randomBytes: RandomBytes;
  readonly tenants: TenantRepository;
  readonly destinations: Destinations;
  readonly usage: UsageLedger;
  readonly adminToken: string;
  /**
   * A key was rotated or revoked here, or a tenant's settings changed: this replica's key
   * cache (whose entries carry the tenant's quota) forgets what it trusted.
   */
  readonly onKeysChanged: () => void;
  /** The quota of a tenant created without one. */
  readonly tenantDefaults: { rpm: number; tpm: number };
}

const createTenantBody = {
  type: "object",
  required: ["id", "name"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$" },
    name: { type: "string", minLength: 1, maxLength: 200 },
    rpm: { type: "integer", minimum: 1, maximum: 100_000_000, description: "Requests per budget window" },
    tpm: { type: "integer", minimum: 1, maximum: 1_000_000_000_000, description: "Tokens per budget window" },
    spendLimitUsd: {
      type: "number",
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      description:
        "Money per spend window (LLM_GATEWAY_SPEND_WINDOW_MS), in US dollars; absent = no money budget",
    },
    acceptsModelFallback: {
      type: "boolean",
      description:
        "LG-10: whether an answer from another (smaller) model may be served when the model's own deployments have no capacity; false = the same model or an error (429/502). Default true",
    },
  },
} as const;

const updateTenantBody = {
  type: "object",
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name: createTenantBody.properties.name,
    rpm: createTenantBody.properties.rpm,
    tpm: createTenantBody.properties.tpm,
    acceptsModelFallback: createTenantBody.properties.acceptsModelFallback,
    spendLimitUsd: {
      type: ["number", "null"],
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      description: "Money per spend window, in US dollars; null removes the money budget",
    },
  },
} as const;

const tenantView = {
  type: "object",
  required: ["id", "name", "rpm", "tpm", "spendLimitUsd", "acceptsModelFallback"],
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    rpm: { type: "integer" },
    tpm: { type: "integer" },
    spendLimitUsd: { type: ["number", "null"], description: "null: no money budget" },
    acceptsModelFallback: { type: "boolean" },
  },
} as const;

const tenantIdParams = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  properties: { id: createTenantBody.properties.id },
} as const;

/** US dollars as the store keeps money: whole nano-dollars; undefined and null pass through. */
function nanoUsdOf<U extends undefined | null>(usd: number | U): number | U {
  return typeof usd === "number" ? Math.round(usd * 1e9) : usd;
}

function tenantViewOf(tenant: TenantSettings) {
  return {
    id: tenant.id,
    name: tenant.name,
    rpm: tenant.rpm,
    tpm: tenant.tpm,
    spendLimitUsd: tenant.spendLimitNanoUsd === undefined ? null : tenant.spendLimitNanoUsd / 1e9,
    acceptsModelFallback: tenant.acceptsModelFallback ?? true,
  };
}

const destinationsView = {
  type: "object",
  required: ["destinations"],
  properties: {
    destinations: {
      type: "array",
      items: {
        type: "object",
        required: ["deployment", "destination", "upstreamModel", "state", "inFlight", "retryAfterMs"],
        properties: {
          deployment: { type: "string" },
          destination: { type: "string" },
          upstreamModel: { type: "string" },
          state: { type: "string", enum: ["closed", "half-open", "open"] },
          inFlight: { type: "integer" },
          consecutiveFailures: { type: "integer" },
          windowCalls: { type: "integer" },
          windowFailures: { type: "integer" },
          retryAfterMs: { type: "number" },
        },
      },
    },
  },
} as const;

export async function registerAdminApi(app: FastifyInstance, options: AdminApiOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "llm-gateway", token: options.adminToken }));
    scope.post<{
      Body: {
        id: string;
        name: string;
        rpm?: number;
        tpm?: number;
        spendLimitUsd?: number;
        acceptsModelFallback?: boolean;
      };
    }>(
      "/v1/admin/tenants",
      {
        schema: {
          summary: "Create a tenant and its first API key (the key is shown only in this answer)",
          tags: ["admin"],
          security: bearerSecurity,
          errorCodes: ["LLM_TENANT_EXISTS"],
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
        const { spendLimitUsd, ...body } = request.body;
        const spendLimitNanoUsd = nanoUsdOf(spendLimitUsd);
        const created = await options.tenants.createIfAbsent({
          ...options.tenantDefaults,
          ...body,
          spendLimitNanoUsd,
        });
        if (created === undefined) {
          throw errors.create("LLM_TENANT_EXISTS", { fields: { id: request.body.id } });
        }
        return reply.code(201).send(created);
      },
    );
    scope.get<{ Params: { id: string } }>(
      "/v1/admin/tenants/:id",
      {
        schema: {
          summary: "A tenant's name and settings (quota, money budget, model fallback)",
          tags: ["admin"],
          security: bearerSecurity,
          errorCodes: ["LLM_TENANT_NOT_FOUND"],
          params: tenantIdParams,
          response: { 200: tenantView },
        },
      },
      async (request) => {
        const tenant = await options.tenants.find(request.params.id);
        if (tenant === undefined)
          throw errors.create("LLM_TENANT_NOT_FOUND", { fields: { id: request.params.id } });
        return tenantViewOf(tenant);
      },
    );
    scope.patch<{
      Params: { id: string };
      Body: {
        name?: string;
        rpm?: number;
        tpm?: number;
        spendLimitUsd?: number | null;
        acceptsModelFallback?: boolean;
      };
    }>(
      "/v1/admin/tenants/:id",
      {
        schema: {
          summary:
            "Change a tenant's settings: only the fields given (spendLimitUsd null = no money budget); in force here at once, on other replicas within their key cache's TTL",
          tags: ["admin"],
          security: bearerSecurity,
          errorCodes: ["LLM_TENANT_NOT_FOUND"],
          params: tenantIdParams,
          body: updateTenantBody,
          response: { 200: tenantView },
        },
      },
      async (request) => {
        const { spendLimitUsd, ...change } = request.body;
        const spendLimitNanoUsd = nanoUsdOf(spendLimitUsd);
        const tenant = await options.tenants.update(request.params.id, { ...change, spendLimitNanoUsd });
        if (tenant === undefined)
          throw errors.create("LLM_TENANT_NOT_FOUND", { fields: { id: request.params.id } });
        options.onKeysChanged();
        return tenantViewOf(tenant);
      },
    );
    scope.get(
      "/v1/admin/destinations",
      {
        schema: {
          summary:
            "Each deployment (a model on a destination): its breaker state, load and failure counts (LG-08)",
          tags: ["admin"],
          security: bearerSecurity,
          response: { 200: destinationsView },
        },
      },
      async () => ({ destinations: options.destinations.snapshot() }),
    );
    registerAdminUsageRoute(scope, options);
    registerApiKeyAdminRoutes(scope, {
      owners: "tenants",
      keys: tenantKeys,
      db: options.db,
      clock: options.clock,
      randomBytes: options.randomBytes,
      ownerNotFound: (id) => errors.create("LLM_TENANT_NOT_FOUND", { fields: { id } }),
      ownerNotFoundCode: "LLM_TENANT_NOT_FOUND",
      // Cleared before the answer leaves: the admin's next request already meets the change.
      onKeysChanged: options.onKeysChanged,
    });
  });
}
