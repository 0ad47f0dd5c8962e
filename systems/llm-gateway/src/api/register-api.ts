/**
 * The whole HTTP API of llm-gateway on a Fastify instance, wired the one way main.ts and the
 * tests both use (as `systems/webhooks/src/api/register-api.ts` does): the OpenAI-compatible
 * routes in a scope whose onRequest hook authenticates the tenant's API key (a stranger is
 * refused before any body is parsed: 401 in OpenAI's error shape, through the shared edge's
 * error formats), the admin routes in another scope behind the operator's token.
 *
 * @example
 * await registerApi(service.app, { db, clock, randomBytes, tenants, catalog, destinations, metrics, settings });
 */
import { createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { VerifiedKeyCache } from "@casebook/kit/verified-key-cache";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Destinations } from "../clients/destinations.ts";
import type { TenantLimits } from "../domain/budget-plan.ts";
import type { ModelCatalog } from "../domain/model-catalog.ts";
import type { SystemMetrics } from "../metrics.ts";
import type { TenantRepository } from "../store/tenant-repository.ts";
import { registerAdminApi } from "./admin-routes.ts";
import type { BudgetContext } from "./budgets.ts";
import {
  type Accounting,
  type ChatSettings,
  registerChatRoutes,
  registerMessagesRoute,
} from "./chat-routes.ts";
import { registerModelRoutes } from "./model-routes.ts";
import type { SemanticCache } from "./semantic-cache.ts";
import type { StreamShutdown } from "./stream-shutdown.ts";
import { registerUsageRoutes } from "./usage-routes.ts";

/** `WWW-Authenticate: Bearer realm="llm-gateway"` on every 401. */
const REALM = "llm-gateway";

/** What the routes need, passed in: time from the clock (never Date.now()), stores and clients. */
export interface ApiOptions {
  readonly db: Database;
  readonly clock: Clock;
  readonly randomBytes: RandomBytes;
  readonly tenants: TenantRepository;
  /** The key check from memory (short TTL); cleared when this replica's admin API revokes or rotates a key. */
  readonly tenantKeys: VerifiedKeyCache<TenantLimits>;
  readonly catalog: ModelCatalog;
  readonly destinations: Destinations;
  readonly metrics: SystemMetrics;
  readonly settings: ChatSettings;
  readonly budgets: BudgetContext;
  readonly cache?: SemanticCache | undefined;
  readonly accounting: Accounting;
  /** LLM_GATEWAY_ADMIN_TOKEN; undefined: no admin routes at all. */
  readonly adminToken?: string | undefined;
  readonly tenantDefaults: { rpm: number; tpm: number };
  /** Open streams and infra's drain bound: the ones still open just before it get an error event (LG-15). */
  readonly streamShutdown: StreamShutdown;
  readonly drainTimeoutMs: number;
}

export async function registerApi(app: FastifyInstance, options: ApiOptions): Promise<void> {
  app.addHook("preClose", (done) => {
    options.streamShutdown.cutAfter(options.drainTimeoutMs);
    done();
  });
  const auth = createBearerAuth({ realm: REALM, verify: (key) => options.tenantKeys.read(key) });
  await app.register(async (scope) => {
    // Anthropic's SDKs send the key as `x-api-key`: the same key, read the same way.
    scope.addHook("onRequest", (request, _reply, done) => {
      const key = request.headers["x-api-key"];
      if (request.headers.authorization === undefined && typeof key === "string")
        request.headers.authorization = `Bearer ${key}`;
      done();
    });
    scope.addHook("onRequest", auth.authenticate);
    registerChatRoutes(scope, { ...options, tenantOf: auth.principalOf });
    registerMessagesRoute(scope, { ...options, tenantOf: auth.principalOf });
    registerModelRoutes(scope, options);
    registerUsageRoutes(scope, {
      usage: options.accounting.usage,
      clock: options.clock,
      tenantIdOf: (request) => auth.principalOf(request as FastifyRequest).id,
    });
  });
  if (options.adminToken === undefined) return;
  await registerAdminApi(app, {
    ...options,
    usage: options.accounting.usage,
    adminToken: options.adminToken,
    onKeysChanged: () => options.tenantKeys.clear(),
  });
}
