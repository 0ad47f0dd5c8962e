/**
 * `GET /`: what this service is and where to go next — its name, version, description
 * and links to its OpenAPI document, API reference page, health, readiness and metrics.
 * JSON by default (a script or `curl` learns the service's map from it); a browser, whose
 * Accept header asks for HTML first, is sent on to the API reference page.
 *
 * @example
 * registerLandingRoute(app, { name: "payments", version: "0.1.0" });
 * // GET / → {"name":"payments","version":"0.1.0","links":{"openapi":"/openapi.json","docs":"/docs",…}}
 */
import type { FastifyInstance } from "fastify";
import { API_REFERENCE_PATH } from "./api-reference.ts";
import { OPS_TAG } from "./ops-routes.ts";

export const LANDING_LINKS = Object.freeze({
  openapi: "/openapi.json",
  docs: API_REFERENCE_PATH,
  health: "/healthz",
  ready: "/readyz",
  metrics: "/metrics",
});

const landingSchema = {
  type: "object",
  required: ["name", "version", "links"],
  properties: {
    name: { type: "string" },
    version: { type: "string" },
    description: { type: "string" },
    links: {
      type: "object",
      required: Object.keys(LANDING_LINKS),
      properties: Object.fromEntries(Object.keys(LANDING_LINKS).map((key) => [key, { type: "string" }])),
    },
  },
} as const;

/** True when the client ranks text/html first, as browsers do; `*\/*` (curl) and JSON clients get JSON. */
function prefersHtml(accept: string | undefined): boolean {
  return accept?.split(",")[0]?.trim().startsWith("text/html") === true;
}

export function registerLandingRoute(
  app: FastifyInstance,
  service: { name: string; version: string; description?: string; browserHome?: string },
): void {
  // Relative: right behind a path prefix too.
  const browserHome = service.browserHome ?? API_REFERENCE_PATH.slice(1);
  const body = {
    name: service.name,
    version: service.version,
    ...(service.description ? { description: service.description } : {}),
    links: LANDING_LINKS,
  };
  app.get(
    "/",
    {
      schema: {
        summary: "What this service is, and links to its API document, reference page, health and metrics",
        tags: [OPS_TAG],
        response: {
          200: landingSchema,
          302: { description: "A browser is sent to the API reference page", type: "null" },
        },
      },
    },
    async (request, reply) => (prefersHtml(request.headers.accept) ? reply.redirect(browserHome, 302) : body),
  );
}
