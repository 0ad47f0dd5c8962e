/**
 * The whole HTTP API of flash-sale on a Fastify instance, wired the one way main.ts and the
 * tests both use (as `systems/webhooks/src/api/register-api.ts` does).
 *
 * @example
 * build: async ({ service, db }) => registerApi(service.app, { db, stock, checkout, clock, … }),
 */
import type { FastifyInstance } from "fastify";
import { type IpLimiter, registerEdgeGuard } from "./edge-guard.ts";
import { type RoomRoutesOptions, registerRoomRoutes } from "./room-routes.ts";
import { registerSaleRoutes, type SaleRoutesOptions } from "./sale-routes.ts";
import { registerWaitingPage } from "./waiting-page.ts";

export type ApiOptions = SaleRoutesOptions &
  RoomRoutesOptions & {
    /** FS-14: the per-IP limit in front of the public API; undefined = none. */
    ipLimiter?: IpLimiter;
  };

export async function registerApi(app: FastifyInstance, options: ApiOptions): Promise<void> {
  await app.register(async (scope) => {
    if (options.ipLimiter !== undefined) registerEdgeGuard(scope, { limiter: options.ipLimiter });
    registerRoomRoutes(scope, options);
    registerWaitingPage(scope);
    await registerSaleRoutes(scope, options);
  });
}
