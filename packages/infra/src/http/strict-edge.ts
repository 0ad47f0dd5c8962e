/**
 * The strict edge every service inherits, installed by `createService` before
 * any route: bodies are JSON only (415 for any other type), parsed without
 * prototype keys or text PostgreSQL cannot store (json-body.ts); path params and
 * query strings hold no such text either (text-guard.ts); and every route is
 * recorded so a known path under the wrong method is 405 with `Allow`
 * (method-not-allowed.ts). Bodies are validated without type coercion by the
 * validator the service's Fastify is built with (body-validation.ts).
 *
 * @example
 * const { routeMethods } = installStrictEdge(app);
 * installErrorHandling(app, { knownCodes, routeMethods });
 */
import type { FastifyInstance } from "fastify";
import { installJsonBodyParser } from "./json-body.ts";
import { type RouteMethods, trackRouteMethods } from "./method-not-allowed.ts";
import { installTextGuard } from "./text-guard.ts";

export function installStrictEdge(app: FastifyInstance): { routeMethods: RouteMethods } {
  const routeMethods = trackRouteMethods(app);
  installJsonBodyParser(app);
  installTextGuard(app);
  return { routeMethods };
}
