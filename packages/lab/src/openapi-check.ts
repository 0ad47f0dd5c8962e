/**
 * Checks a running service's /openapi.json the way a client generator would use it: the
 * document passes an OpenAPI validator (@apidevtools/swagger-parser: the 3.1 schema, every
 * `$ref` resolves), and every route the service registered (Fastify's onRoute, from
 * `service.routes`) is an operation with a 2xx response that has a body schema (or is
 * declared bodiless), with no `authorization` header parameter (bearer auth is a security
 * scheme). Returns the problems found, one line each, so a test asserts an empty list and a
 * failure names every gap at once.
 *
 * @example
 * const problems = await checkOpenApiDocument(url, service.routes);
 * assert.deepEqual(problems, []);
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { openApiPath } from "@casebook/infra/http/openapi";
import type { RegisteredRoute } from "@casebook/infra/http/service";

// biome-ignore lint/suspicious/noExplicitAny: the document is JSON walked by key
type Json = any;

/** Bound on the document fetch: a service that does not answer fails the check, not the test run. */
const FETCH_TIMEOUT_MS = 10_000;

function has2xxSchema(operation: Json): boolean {
  for (const [status, response] of Object.entries<Json>(operation?.responses ?? {})) {
    if (!/^2(\d\d|XX)$/.test(status)) continue;
    // No content: the route declared a bodiless answer (`type: "null"`, a 204).
    if (response.content === undefined) return true;
    if (Object.values<Json>(response.content).every((media) => media?.schema !== undefined)) return true;
  }
  return false;
}

/** The gaps between the registered routes and the document; empty when it is complete and valid. */
export async function checkOpenApiDocument(
  baseUrl: string,
  routes: readonly RegisteredRoute[],
): Promise<string[]> {
  const response = await fetch(`${baseUrl}/openapi.json`, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (response.status !== 200) return [`GET /openapi.json answered ${response.status}`];
  const document: Json = await response.json();
  const problems: string[] = [];
  try {
    // validate() dereferences in place: give it a copy, keep ours with its $refs.
    await SwaggerParser.validate(structuredClone(document));
  } catch (error) {
    problems.push(`invalid OpenAPI: ${(error as Error).message}`);
  }
  for (const route of routes) {
    if (route.hidden || route.method === "HEAD") continue;
    const path = openApiPath(route.url).path;
    const operation = document.paths?.[path]?.[route.method.toLowerCase()];
    const name = `${route.method} ${route.url}`;
    if (operation === undefined) {
      problems.push(`${name}: not in the document`);
      continue;
    }
    if (!has2xxSchema(operation)) problems.push(`${name}: no 2xx response with a schema`);
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in === "header" && String(parameter.name).toLowerCase() === "authorization") {
        problems.push(`${name}: authorization is a header parameter, not a security requirement`);
      }
    }
  }
  return problems;
}
