/**
 * The edge contract suite against the smallest service that passes it: createService, one
 * write behind a static bearer token, an in-memory list as its state. Every system's
 * `test/edge-contract.test.ts` runs the same cases on its own service.
 */
import { createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import { createService } from "@casebook/infra/http/service";
import { edgeContractSuite, opsEdgeContractSuite } from "../src/edge-contract-suite.ts";

const TOKEN = "edge-suite-token-0123456789";

function widgetService() {
  const widgets: unknown[] = [];
  const service = createService({
    name: "widgets",
    version: "1",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const authenticate = createStaticTokenAuth({ realm: "widgets", token: TOKEN });
  service.app.register(async (scope) => {
    scope.addHook("onRequest", authenticate);
    scope.get("/v1/widgets", async () => ({ items: widgets }));
    scope.post(
      "/v1/widgets",
      {
        bodyLimit: 2_048,
        schema: {
          body: {
            type: "object",
            required: ["name", "cost"],
            additionalProperties: false,
            properties: {
              name: { type: "string", maxLength: 4_096 },
              cost: { type: "integer", minimum: 0 },
              tags: { type: "array", items: { type: "string" } },
            },
          },
        },
      },
      async (request, reply) => {
        widgets.push(request.body);
        return reply.code(201).send({ created: widgets.length });
      },
    );
  });
  return { service, widgets };
}

edgeContractSuite({
  name: "widgets",
  open: async () => {
    const { service, widgets } = widgetService();
    await service.app.ready();
    return {
      subject: { service, stateProbe: async () => structuredClone(widgets) },
      close: () => service.close(),
    };
  },
  write: { method: "POST", url: "/v1/widgets", body: { name: "gear", cost: 3, tags: ["a"] } },
  fields: { "/name": "string", "/cost": "integer", "/tags": "array", "/tags/0": "string" },
  stringField: "/name",
  bodyLimitBytes: 2_048,
  wrongMethod: { method: "DELETE", allow: "GET, HEAD, POST" },
  auth: { header: "authorization", valid: () => `Bearer ${TOKEN}`, wrong: `Bearer ${TOKEN}x` },
});

opsEdgeContractSuite({
  name: "widgets",
  open: async () => {
    const { service, widgets } = widgetService();
    return {
      subject: { service, stateProbe: async () => structuredClone(widgets) },
      close: () => service.close(),
    };
  },
});
