/**
 * The operator's API, behind `LLM_GATEWAY_ADMIN_TOKEN` (registered only when it is set):
 * create a tenant with its quota (RPM, TPM) and its first API key (shown once), and infra's shared API-key routes
 * for the tenants' keys (list, issue, rotate with overlap, revoke), and the destinations'
 * breaker states (LG-08).
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
import { type TenantRepository, tenantKeys } from "../store/tenant-repository.ts";
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
  /** A key was issued, rotated or revoked here: this replica's key cache forgets what it trusted. */
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
  },
} as const;

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
    // Any change to keys (issue, rotate, revoke), succeeded or not: the cached key checks are
    // dropped before the answer leaves, so the admin's next request already meets the change.
    scope.addHook("onSend", async (request, _reply, payload) => {
      if (request.method !== "GET" && request.url.includes("/api-keys")) options.onKeysChanged();
      return payload;
    });
    scope.post<{ Body: { id: string; name: string; rpm?: number; tpm?: number; spendLimitUsd?: number } }>(
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
        const spendLimitNanoUsd = spendLimitUsd === undefined ? undefined : Math.round(spendLimitUsd * 1e9);
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
    });
  });
}
