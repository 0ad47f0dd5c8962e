/**
 * The provider simulator's control routes beyond the base's /admin/behaviour: one model's
 * knobs changed without resending the table (`PUT /admin/models/:model`, which also adds a
 * model), and the last streams with their tokens and how each ended (`GET /admin/streams`).
 */
import type { FaultInjector } from "@casebook/infra/http/simulator-faults";
import type { FastifyInstance } from "fastify";
import {
  defaultModelProfile,
  type ModelProfile,
  mergeModelProfile,
  modelPatchSchema,
  modelProfileSchema,
  type ProviderBehaviour,
  profileOf,
} from "./provider-behaviour.ts";
import { maxStreamRecords, type ProviderState } from "./provider-state.ts";

const tags = ["admin"];

const streamView = {
  type: "object",
  required: ["id", "model", "wire", "stream", "promptTokens", "generatedTokens", "end"],
  properties: {
    id: { type: "string" },
    model: { type: "string" },
    wire: { type: "string", enum: ["openai", "anthropic"] },
    stream: { type: "boolean" },
    promptTokens: { type: "integer" },
    generatedTokens: { type: "integer", description: "Tokens the model generated (what a provider bills)" },
    end: { type: "string", enum: ["open", "done", "client-closed", "cut"] },
  },
} as const;

export function registerProviderAdminRoutes(
  admin: FastifyInstance,
  options: { state: ProviderState; faults: FaultInjector<ProviderBehaviour> },
): void {
  const { state, faults } = options;
  admin.put<{ Params: { model: string }; Body: Partial<ModelProfile> }>(
    "/admin/models/:model",
    {
      schema: {
        summary: "Change some knobs of one model (a new name adds the model with the default profile)",
        tags,
        params: {
          type: "object",
          required: ["model"],
          properties: { model: { type: "string", pattern: "^[A-Za-z0-9._:/-]{1,100}$" } },
        },
        body: modelPatchSchema,
        response: { 200: modelProfileSchema },
      },
    },
    async (request) => {
      const { model } = request.params;
      const current = profileOf(faults.behaviour, model) ?? defaultModelProfile;
      const next = mergeModelProfile(current, request.body);
      faults.update({ models: { ...faults.behaviour.models, [model]: next } });
      return next;
    },
  );
  admin.get<{ Querystring: { limit: number } }>(
    "/admin/streams",
    {
      schema: {
        summary: "The last generations (streamed or not): tokens generated and how each ended",
        tags,
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: { limit: { type: "integer", minimum: 1, maximum: maxStreamRecords, default: 100 } },
        },
        response: {
          200: {
            type: "object",
            required: ["streams"],
            properties: { streams: { type: "array", items: streamView } },
          },
        },
      },
    },
    async (request) => ({ streams: state.records(request.query.limit) }),
  );
}
