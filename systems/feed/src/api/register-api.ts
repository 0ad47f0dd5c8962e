/**
 * The whole HTTP API of feed on a Fastify instance, wired the one way main.ts and the
 * tests both use (as `systems/webhooks/src/api/register-api.ts` does): each
 * `src/api/*-routes.ts` registers its routes into one scope, so a hook added to that scope
 * (authentication, say) covers all of them and none of the operations routes.
 *
 * @example
 * // main.ts, in startService's build step; a test does the same on its own service
 * build: async ({ service }) => registerApi(service.app, { clock: systemClock }),
 */
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";

/** What the routes need, passed in: time from the clock (never Date.now()), stores as they arrive. */
export interface ApiOptions {
  readonly clock: Clock;
}

export async function registerApi(app: FastifyInstance, _options: ApiOptions): Promise<void> {
  await app.register(async (_scope) => {
    // No route yet: the first ones are registered here, each `register<Thing>Routes(scope, options)`.
  });
}
