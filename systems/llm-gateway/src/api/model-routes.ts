/**
 * `GET /v1/models`, OpenAI-compatible: the logical model names this gateway serves (LG-19),
 * not what stands behind them upstream.
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import type { ModelCatalog } from "../domain/model-catalog.ts";
import { modelListView } from "./chat-schemas.ts";

export function registerModelRoutes(scope: FastifyInstance, options: { catalog: ModelCatalog }): void {
  const body = {
    object: "list",
    data: [...options.catalog.keys()].map((id) => ({
      id,
      object: "model",
      created: 0,
      owned_by: "llm-gateway",
    })),
  };
  scope.get(
    "/v1/models",
    {
      schema: {
        summary: "List the models this gateway serves (OpenAI-compatible)",
        tags: ["openai"],
        security: bearerSecurity,
        response: { 200: modelListView },
      },
    },
    async () => body,
  );
}
