/**
 * 405 Method Not Allowed (RFC 9110 §15.5.6) for a path some route serves under
 * other methods, with the `Allow` header listing them; 404 stays for paths no
 * route serves. Fastify answers 404 for both (fastify#862), which tells a client
 * that sent `PUT /v1/things/1` to a GET/DELETE resource that the resource does
 * not exist.
 *
 * Fastify exposes no "which methods match this path" lookup, so every route is
 * also recorded in a second find-my-way router (Fastify's own router library,
 * with Fastify's default matching options) from the `onRoute` hook; it is asked
 * only when no route matched, so served requests pay nothing.
 *
 * @example
 * const methods = trackRouteMethods(app); // before any route is added
 * app.get("/v1/things/:id", handler);
 * methods.allowedFor("/v1/things/7"); // ["GET", "HEAD"]
 * methods.allowedFor("/nothing");     // []
 */

import type { FastifyInstance } from "fastify";
import type { HTTPMethod } from "find-my-way";
import Router from "find-my-way";

export interface RouteMethods {
  /** The methods routes serve at `path` (no query string), sorted; empty when no route matches it. */
  allowedFor(path: string): string[];
}

function noop(): void {}

/** Records every route added to `app` from now on (call before adding routes). */
export function trackRouteMethods(app: FastifyInstance): RouteMethods {
  // The same matching as Fastify's defaults, so "matches under another method" means what Fastify means.
  const router = Router({ ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, caseSensitive: true });
  const methods = new Set<string>();
  const recorded = new Set<string>();
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      const key = `${method} ${route.url}`;
      if (recorded.has(key)) continue; // the same path under constraints (version, host) is one entry here
      recorded.add(key);
      try {
        router.on(method as HTTPMethod, route.url, noop);
        methods.add(method);
      } catch {
        // A method find-my-way does not know (one added with Fastify's addHttpMethod): Fastify has its
        // own router for it; this index only leaves it out of `Allow` rather than fail the route.
      }
    }
  });
  return {
    allowedFor(path) {
      return [...methods].filter((method) => router.find(method as HTTPMethod, path) !== null).sort();
    },
  };
}
