/**
 * The whole HTTP API of flash-sale on a Fastify instance, wired the one way main.ts and the
 * tests both use (as `systems/webhooks/src/api/register-api.ts` does).
 *
 * @example
 * build: async ({ service, db }) => registerApi(service.app, { db, stock, checkout, clock, … }),
 */
import type { FastifyInstance } from "fastify";
import { type RoomRoutesOptions, registerRoomRoutes } from "./room-routes.ts";
import { registerSaleRoutes, type SaleRoutesOptions } from "./sale-routes.ts";
import { registerWaitingPage } from "./waiting-page.ts";

export type ApiOptions = SaleRoutesOptions & RoomRoutesOptions;

export async function registerApi(app: FastifyInstance, options: ApiOptions): Promise<void> {
  await app.register(async (scope) => {
    registerRoomRoutes(scope, options);
    registerWaitingPage(scope);
    await registerSaleRoutes(scope, options);
  });
}
