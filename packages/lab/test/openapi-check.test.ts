import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { freePort } from "../src/free-port.ts";
import { checkOpenApiDocument } from "../src/openapi-check.ts";

test("checkOpenApiDocument names each route without a 2xx schema or with an authorization parameter", async (t) => {
  const service = createService({
    name: "gaps",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  service.app.get("/documented", { schema: { response: { 200: { type: "object" } } } }, async () => ({}));
  service.app.get("/bare", async () => ({}));
  service.app.delete("/gone", { schema: { response: { 204: { type: "null" } } } }, async (_r, reply) =>
    reply.code(204).send(),
  );
  service.app.get(
    "/old-auth",
    {
      schema: {
        headers: { type: "object", properties: { authorization: { type: "string" } } },
        response: { 200: { type: "object" } },
      },
    },
    async () => ({}),
  );
  service.app.get("/internal", { schema: { hide: true } }, async () => ({}));
  const { url } = await service.listen({ port: await freePort() });
  assert.deepEqual(await checkOpenApiDocument(url, service.routes), [
    "GET /bare: no 2xx response with a schema",
    "GET /old-auth: authorization is a header parameter, not a security requirement",
  ]);
});
