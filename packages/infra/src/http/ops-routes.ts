/**
 * The routes every service answers for its operators: /healthz (the process is
 * alive), /readyz (its dependencies answer), /metrics (Prometheus text) and
 * /openapi.json (its API). They carry response schemas so they document
 * themselves in /openapi.json like any route.
 *
 * @example
 * registerOpsRoutes(app, { registry, readiness: () => runReadinessChecks(checks, opts), openapi: () => text });
 */
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import "./openapi.ts"; // the FastifySchema augmentation: summary, tags
import "./access-log.ts"; // the route config augmentation: accessLog
import type { ReadinessReport } from "./readiness.ts";

export const OPS_TAG = "operations";

/** The operator routes, whose access lines are off (their errors are still logged by the error handler). */
export const OPS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics", "/openapi.json"]);

const readinessSchema = {
  type: "object",
  required: ["status", "checks"],
  properties: {
    status: { type: "string", enum: ["ok", "unavailable"] },
    checks: {
      type: "object",
      additionalProperties: {
        type: "object",
        required: ["status", "durationMs"],
        properties: {
          status: { type: "string", enum: ["ok", "failed"] },
          durationMs: { type: "integer" },
          error: { type: "string" },
        },
      },
    },
  },
};

export interface OpsRouteSources {
  registry: Registry;
  readiness(): Promise<ReadinessReport>;
  /** The OpenAPI document as JSON text. */
  openapi(): string;
}

/** Probes and scrapes arrive every few seconds from every replica: their lines would drown the rest. */
const quiet = { accessLog: "off" } as const;

export function registerOpsRoutes(app: FastifyInstance, sources: OpsRouteSources): void {
  app.get(
    "/healthz",
    {
      config: quiet,
      schema: {
        summary: "Liveness: the process is up and serving HTTP",
        tags: [OPS_TAG],
        response: {
          200: {
            type: "object",
            required: ["status"],
            properties: { status: { type: "string", const: "ok" } },
          },
        },
      },
    },
    async () => ({ status: "ok" }),
  );
  app.get(
    "/readyz",
    {
      config: quiet,
      schema: {
        summary: "Readiness: every dependency check passed within its timeout",
        tags: [OPS_TAG],
        response: { 200: readinessSchema, 503: readinessSchema },
      },
    },
    async (_request, reply) => {
      const report = await sources.readiness();
      return reply.code(report.status === "ok" ? 200 : 503).send(report);
    },
  );
  app.get(
    "/metrics",
    {
      config: quiet,
      schema: {
        summary: "Prometheus metrics, text format",
        tags: [OPS_TAG],
        // The body is sent as text (a string is never re-serialized): the schema only documents it.
        response: { 200: { content: { "text/plain": { schema: { type: "string" } } } } },
      },
    },
    async (_r, reply) => reply.type(sources.registry.contentType).send(await sources.registry.metrics()),
  );
  app.get(
    "/openapi.json",
    {
      config: quiet,
      schema: {
        summary: "This document",
        tags: [OPS_TAG],
        // Sent as ready JSON text, so this schema documents the body without re-serializing (or trimming) it.
        response: {
          200: {
            description: "An OpenAPI 3.1 document",
            type: "object",
            required: ["openapi", "info", "paths"],
            additionalProperties: true,
            properties: { openapi: { type: "string" }, info: { type: "object", additionalProperties: true } },
          },
        },
      },
    },
    async (_r, reply) => reply.type("application/json; charset=utf-8").send(sources.openapi()),
  );
}
