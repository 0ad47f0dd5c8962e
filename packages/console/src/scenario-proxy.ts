/**
 * The console's scenario buttons reach each system's own scenario API (infra's scenario-runs)
 * through these two routes, answered as the system answered (202 with the run id, 409 while one
 * runs, its problem+json otherwise):
 *
 *   POST /api/systems/:name/scenarios/:id/runs          → POST {system}/v1/scenarios/:id/runs
 *   GET  /api/systems/:name/scenarios/:id/runs/:runId   → GET  {system}/v1/scenarios/:id/runs/:runId
 *
 * Only scenarios the system declared in its manifest are forwarded. Each call is bounded in time;
 * a system that does not answer is a 502 naming it. When the console listens beyond loopback
 * (CASEBOOK_CONSOLE_ADMIN_TOKEN set), a start needs `Authorization: Bearer <that token>`.
 *
 * @example
 * registerScenarioProxy(service.app, { catalog, adminToken: config.adminToken });
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply } from "fastify";
import { consoleErrors } from "./console-errors.ts";
import type { Catalog } from "./system-catalog.ts";

export interface ScenarioProxyOptions {
  catalog: Catalog;
  adminToken?: string | undefined;
  /** Bound on one forwarded call. */
  timeoutMs?: number;
}

const params = {
  type: "object",
  required: ["name", "id"],
  properties: {
    name: { type: "string", pattern: "^[a-z][a-z0-9-]{0,40}$" },
    id: { type: "string", pattern: "^[a-z][a-z0-9-]{0,60}$" },
    runId: { type: "string", format: "uuid" },
  },
} as const;

export function registerScenarioProxy(app: FastifyInstance, options: ScenarioProxyOptions): void {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const target = (name: string, id: string): string => {
    const system = options.catalog.systems.find((s) => s.name === name);
    if (system === undefined) throw consoleErrors.create("CONSOLE_SYSTEM_NOT_FOUND", { fields: { name } });
    if (!system.declaration?.scenarios.some((s) => s.id === id))
      throw consoleErrors.create("CONSOLE_SCENARIO_NOT_FOUND", { fields: { name, id } });
    return `${system.url}/v1/scenarios/${id}/runs`;
  };
  const forward = async (reply: FastifyReply, name: string, url: string, method: "GET" | "POST") => {
    let response: Response;
    try {
      response = await fetch(url, { method, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw consoleErrors.create("CONSOLE_SYSTEM_UNREACHABLE", {
        fields: { name },
        detail: `${name} did not answer ${method} ${url}: ${(error as Error).message}`,
      });
    }
    const type = response.headers.get("content-type") ?? "application/json";
    return reply
      .code(response.status)
      .type(type)
      .send(await response.text());
  };

  app.post<{ Params: { name: string; id: string } }>(
    "/api/systems/:name/scenarios/:id/runs",
    { schema: { summary: "Start one of the system's declared scenarios (forwarded to it)", params } },
    async (request, reply) => {
      if (options.adminToken !== undefined) {
        const sent = Buffer.from(request.headers.authorization ?? "");
        const expected = Buffer.from(`Bearer ${options.adminToken}`);
        if (sent.length !== expected.length || !timingSafeEqual(sent, expected))
          throw consoleErrors.create("CONSOLE_ADMIN_TOKEN_REQUIRED");
      }
      const { name, id } = request.params;
      return forward(reply, name, target(name, id), "POST");
    },
  );

  app.get<{ Params: { name: string; id: string; runId: string } }>(
    "/api/systems/:name/scenarios/:id/runs/:runId",
    { schema: { summary: "A scenario run's progress, points and result (forwarded)", params } },
    async (request, reply) => {
      const { name, id, runId } = request.params;
      return forward(reply, name, `${target(name, id)}/${runId}`, "GET");
    },
  );
}
