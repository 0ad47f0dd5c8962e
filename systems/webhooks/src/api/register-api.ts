/**
 * The whole tenant HTTP API on a Fastify instance, wired the one way main.ts and the tests
 * both use: tenant routes in a scope whose onRequest hook authenticates the API key (a
 * stranger is refused before any body is parsed), admin routes in another scope behind the
 * operator's token — registered only when a token is configured. Both are
 * @casebook/infra/http/bearer-auth in realm "webhooks": no credentials is 401 AUTH_MISSING, a
 * malformed, unknown, wrong, revoked or expired key one 401 AUTH_INVALID (WH-02, WH-12).
 *
 * @example
 * const service = createService({ name: "webhooks", version, errors: webhooksErrorRegistries });
 * await registerWebhooksApi(service.app, { db, clock: systemClock, randomBytes, settings, tenantDefaults });
 */
import { createBearerAuth, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import type { RandomBytes } from "../domain/store-ids.ts";
import { authenticateTenant } from "../store/tenant-repository.ts";
import { registerAdminRoutes, type TenantDefaults } from "./admin-routes.ts";
import type { ApiSettings } from "./api-context.ts";
import { registerDeliveryRoutes } from "./delivery-routes.ts";
import { registerEventRoutes } from "./event-routes.ts";
import { registerSubscriptionRoutes } from "./subscription-routes.ts";

/** `WWW-Authenticate: Bearer realm="webhooks"` on every 401. */
const REALM = "webhooks";

export interface WebhooksApiOptions {
  db: Database;
  clock: Clock;
  randomBytes: RandomBytes;
  settings: ApiSettings;
  /** Retention of tenants created through the admin API when the request does not say. */
  tenantDefaults: TenantDefaults;
  /** WEBHOOKS_ADMIN_TOKEN; undefined: no admin routes at all. */
  adminToken?: string | undefined;
}

export async function registerWebhooksApi(app: FastifyInstance, options: WebhooksApiOptions): Promise<void> {
  const { db, clock, randomBytes, settings } = options;
  // WH-12: the tenant a key resolves to scopes every query of the request.
  const auth = createBearerAuth({
    realm: REALM,
    verify: (key) => authenticateTenant(db, key, clock.nowMs()),
  });
  const context = { db, clock, randomBytes, settings, tenantOf: auth.principalOf };
  await app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    registerEventRoutes(scope, context);
    registerSubscriptionRoutes(scope, context);
    registerDeliveryRoutes(scope, context);
  });
  const { adminToken } = options;
  if (adminToken === undefined) return;
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: REALM, token: adminToken }));
    registerAdminRoutes(scope, { db, clock, randomBytes, tenantDefaults: options.tenantDefaults });
  });
}
