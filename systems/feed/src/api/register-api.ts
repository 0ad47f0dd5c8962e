/**
 * The whole HTTP API of feed on a Fastify instance, wired the one way main.ts and the
 * tests both use: each `src/api/*-routes.ts` registers its routes into one scope.
 *
 * @example
 * // main.ts, in startService's build step
 * build: async ({ service }) => registerApi(service.app, { posts, graph, feed, ids, clock }),
 */
import type { FastifyInstance } from "fastify";
import { type GraphRoutesOptions, registerGraphRoutes } from "./graph-routes.ts";
import { type HomeRoutesOptions, registerHomeRoutes } from "./home-routes.ts";
import { type PostRoutesOptions, registerPostRoutes } from "./post-routes.ts";

/** What the routes need, passed in: time from the clock (never Date.now()), the stores, the feed reader. */
export type ApiOptions = PostRoutesOptions & GraphRoutesOptions & HomeRoutesOptions;

export async function registerApi(app: FastifyInstance, options: ApiOptions): Promise<void> {
  await app.register(async (scope) => {
    registerPostRoutes(scope, options);
    registerGraphRoutes(scope, options);
    registerHomeRoutes(scope, options);
  });
}
