/**
 * The whole HTTP API of url-shortener on a Fastify instance, wired the one way main.ts and the
 * tests both use (as `systems/webhooks/src/api/register-api.ts` does): the links API in a
 * scope whose onRequest hook authenticates the API key (@casebook/infra/http/bearer-auth:
 * no key 401 AUTH_MISSING, a wrong one 401 AUTH_INVALID), the admin API in another scope
 * behind the operator's token (only when one is configured), and the redirect route outside
 * both — anyone may follow a short link.
 *
 * @example
 * await registerApi(service.app, { db, links, reader, codes, verifier, domains, clock, limiter, metrics, visits, randomBytes });
 */
import { createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { FastifyInstance } from "fastify";
import type { VisitSink } from "../domain/visit.ts";
import type { ClickStore } from "../store/click-store.ts";
import { workspaceKeys } from "../store/workspace-repository.ts";
import { registerAdminApi } from "./admin-routes.ts";
import type { LinksContext } from "./api-context.ts";
import type { Caller } from "./create-link.ts";
import { registerLinkRoutes } from "./link-routes.ts";
import { type RedirectCore, registerRedirectRoute } from "./redirect-route.ts";

export interface ApiOptions extends LinksContext {
  readonly visits: VisitSink;
  /** The click log's reads (the admin's orphan visits); in its own database on PGlite (store/click-database.ts). */
  readonly clicks: ClickStore;
  /** Cache-Control stale-if-error of a link without expiry. */
  readonly staleIfErrorS?: number;
  /** URL_SHORTENER_EDGE_TOKEN (redirect-route.ts). */
  readonly edgeToken?: string | undefined;
  readonly randomBytes: RandomBytes;
  /** URL_SHORTENER_ADMIN_TOKEN; undefined: no admin routes at all. */
  readonly adminToken?: string | undefined;
  /** Routes beside the links API that need the same caller (stats, QR), registered in its scope. */
  readonly extraRoutes?: (
    scope: FastifyInstance,
    callerOf: (request: import("fastify").FastifyRequest) => Caller,
  ) => void;
}

/** Registers every route; gives back the redirect's core, which main.ts's fast path shares. */
export async function registerApi(
  app: FastifyInstance,
  options: ApiOptions,
): Promise<{ redirect: RedirectCore }> {
  const { db, clock } = options;
  const auth = createBearerAuth<Caller>({
    realm: "url-shortener",
    verify: async (key) => {
      const workspaceId = await workspaceKeys.authenticate(db, key, clock.nowMs());
      if (workspaceId === undefined) return undefined;
      // authenticate parsed it already: a key that authenticates has this prefix.
      return { workspaceId, keyPrefix: workspaceKeys.scheme.parse(key)!.prefix };
    },
  });
  await app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    registerLinkRoutes(scope, options, auth.principalOf);
    options.extraRoutes?.(scope, auth.principalOf);
  });
  if (options.adminToken !== undefined) {
    await registerAdminApi(app, {
      db,
      clicks: options.clicks,
      links: options.links,
      reader: options.reader,
      clock,
      randomBytes: options.randomBytes,
      adminToken: options.adminToken,
    });
  }
  const redirect = registerRedirectRoute(app, {
    reader: options.reader,
    domains: options.domains,
    clock,
    visits: options.visits,
    metrics: options.metrics,
    ...(options.staleIfErrorS === undefined ? {} : { staleIfErrorS: options.staleIfErrorS }),
    edgeToken: options.edgeToken,
  });
  return { redirect };
}
