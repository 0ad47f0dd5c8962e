import assert from "node:assert/strict";
import { test } from "node:test";
import { defineErrors } from "@casebook/kit/errors";
import { bearerSecurity, bearerSecurityScheme } from "../../src/http/bearer-auth.ts";
import { buildOpenApiDocument, defaultOperationId, openApiPath, routeDocs } from "../../src/http/openapi.ts";
import { createService } from "../../src/http/service.ts";

// biome-ignore lint/suspicious/noExplicitAny: the document is JSON walked by key in assertions
type Doc = any;

const linkErrors = defineErrors({ LINK_NOT_FOUND: { status: 404, message: "No link with this code." } });

async function linkServiceDocument(): Promise<Doc> {
  const service = createService({
    name: "url-shortener",
    version: "0.3.0",
    description: "Shortens URLs.",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: [linkErrors],
  });
  service.app.addSchema({
    $id: "Link",
    type: "object",
    required: ["code", "target"],
    properties: { code: { type: "string" }, target: { type: "string", format: "uri" } },
  });
  service.app.post(
    "/v1/links",
    {
      schema: {
        summary: "Shorten a URL",
        tags: ["links"],
        operationId: "createLink",
        body: {
          type: "object",
          required: ["target"],
          properties: { target: { type: "string", format: "uri" }, ttlS: { type: "integer", minimum: 1 } },
        },
        response: { 201: { $ref: "Link#" } },
      },
    },
    async (_request, reply) => reply.code(201).send({ code: "abc", target: "https://example.com" }),
  );
  service.app.get(
    "/v1/links/:code",
    {
      schema: {
        summary: "Look up a link",
        tags: ["links"],
        params: { type: "object", properties: { code: { type: "string", pattern: "^[a-z0-9]+$" } } },
        querystring: {
          type: "object",
          required: ["format"],
          properties: { format: { type: "string", enum: ["json", "text"], description: "Body format." } },
        },
        headers: { type: "object", properties: { "x-tenant": { type: "string" } } },
        response: { "2xx": { $ref: "Link#" } },
      },
    },
    async () => ({ code: "abc", target: "https://example.com" }),
  );
  service.app.delete(
    "/v1/links/:code",
    {
      schema: {
        tags: ["admin"],
        deprecated: true,
        response: { 204: { type: "null", description: "Deleted." } },
      },
    },
    async (_request, reply) => reply.code(204).send(),
  );
  service.app.get("/internal/debug", { schema: { hide: true } }, async () => ({}));
  const res = await service.app.inject({ url: "/openapi.json" });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers["content-type"]), /^application\/json/);
  await service.close();
  return res.json();
}

test("GET /openapi.json is an OpenAPI 3.1 document of the service's routes", async () => {
  const doc = await linkServiceDocument();
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual(doc.info, { title: "url-shortener", version: "0.3.0", description: "Shortens URLs." });
  assert.deepEqual(Object.keys(doc.paths), [
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/",
    "/docs",
    "/v1/links",
    "/v1/links/{code}",
  ]);
  assert.deepEqual(Object.keys(doc.paths["/v1/links/{code}"]), ["get", "delete"], "no HEAD operations");
  assert.equal(doc.paths["/internal/debug"], undefined, "hidden routes stay out");
  assert.deepEqual(doc.tags, [{ name: "operations" }, { name: "links" }, { name: "admin" }]);
});

test("body, params, querystring, headers and responses come from the route schemas", async () => {
  const doc = await linkServiceDocument();
  const create = doc.paths["/v1/links"].post;
  assert.equal(create.summary, "Shorten a URL");
  assert.equal(create.operationId, "createLink");
  assert.deepEqual(create.tags, ["links"]);
  assert.equal(create.requestBody.required, true);
  assert.deepEqual(create.requestBody.content["application/json"].schema.required, ["target"]);
  assert.deepEqual(create.responses["201"], {
    description: "Created",
    content: { "application/json": { schema: { $ref: "#/components/schemas/Link" } } },
  });
  assert.deepEqual(create.responses.default, { $ref: "#/components/responses/Problem" });

  const lookup = doc.paths["/v1/links/{code}"].get;
  assert.deepEqual(lookup.parameters, [
    { name: "code", in: "path", required: true, schema: { type: "string", pattern: "^[a-z0-9]+$" } },
    {
      name: "format",
      in: "query",
      required: true,
      description: "Body format.",
      schema: { type: "string", enum: ["json", "text"], description: "Body format." },
    },
    { name: "x-tenant", in: "header", required: false, schema: { type: "string" } },
  ]);
  assert.ok(lookup.responses["2XX"], "Fastify's 2xx becomes OpenAPI's 2XX");

  const remove = doc.paths["/v1/links/{code}"].delete;
  assert.equal(remove.deprecated, true);
  assert.deepEqual(remove.responses["204"], { description: "Deleted." });
  assert.deepEqual(remove.parameters, [
    { name: "code", in: "path", required: true, schema: { type: "string" } },
  ]);
});

test("shared schemas become components, and Problem lists every registered error code", async () => {
  const doc = await linkServiceDocument();
  assert.deepEqual(doc.components.schemas.Link.required, ["code", "target"]);
  assert.equal(doc.components.schemas.Link.$id, undefined);
  const codes: string[] = doc.components.schemas.Problem.properties.code.enum;
  for (const code of ["LINK_NOT_FOUND", "REQUEST_INVALID", "INTERNAL_ERROR", "SERVICE_CLOSING"]) {
    assert.ok(codes.includes(code), code);
  }
  assert.deepEqual(Object.keys(doc.components.responses.Problem.content), ["application/problem+json"]);
});

test("every templated path parameter is declared, as OpenAPI requires", async () => {
  const doc = await linkServiceDocument();
  for (const [path, operations] of Object.entries<Record<string, Doc>>(doc.paths)) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const operation of Object.values(operations)) {
      const declared = (operation.parameters ?? [])
        .filter((p: Doc) => p.in === "path")
        .map((p: Doc) => p.name);
      assert.deepEqual(declared, templated, path);
    }
  }
});

test("openApiPath turns Fastify patterns into OpenAPI templates", () => {
  assert.deepEqual(openApiPath("/v1/links/:code"), { path: "/v1/links/{code}", names: ["code"] });
  assert.deepEqual(openApiPath("/a/:id(^\\d+$)/b/:name"), {
    path: "/a/{id}/b/{name}",
    names: ["id", "name"],
  });
  assert.deepEqual(openApiPath("/files/*"), { path: "/files/{wildcard}", names: ["wildcard"] });
  assert.deepEqual(openApiPath("/time/12::30"), { path: "/time/12:30", names: [] });
});

test("refs inside a shared schema are re-pointed into components", () => {
  const doc: Doc = buildOpenApiDocument({
    title: "t",
    version: "0",
    routes: routeDocs({
      method: ["GET", "HEAD"],
      url: "/x",
      schema: { response: { 200: { $ref: "Order#" } } },
    }),
    sharedSchemas: {
      Money: { $id: "Money", type: "object", properties: { cents: { type: "integer" } } },
      Order: {
        $id: "Order",
        type: "object",
        properties: { total: { $ref: "Money#" }, lines: { type: "array", items: { $ref: "#/$defs/line" } } },
        $defs: { line: { type: "string" } },
      },
    },
  });
  assert.deepEqual(Object.keys(doc.paths["/x"]), ["get"]);
  const order = doc.components.schemas.Order;
  assert.equal(order.properties.total.$ref, "#/components/schemas/Money");
  assert.equal(order.properties.lines.items.$ref, "#/components/schemas/Order/$defs/line");
});

test("a route's 4xx problems, bearer security, servers and a default operationId are documented", async () => {
  const service = createService({
    name: "links",
    version: "1.0.0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: [linkErrors],
    openapi: { securitySchemes: bearerSecurityScheme("Tenant API key") },
  });
  service.app.patch(
    "/v1/links/:code",
    {
      schema: {
        security: bearerSecurity,
        errorCodes: ["LINK_NOT_FOUND"],
        body: { type: "object", properties: { target: { type: "string" } } },
        response: { 200: { type: "object", properties: { code: { type: "string" } } } },
      },
    },
    async () => ({ code: "abc" }),
  );
  const doc: Doc = (await service.app.inject({ url: "/openapi.json" })).json();
  await service.close();
  assert.deepEqual(doc.servers, [{ url: "/" }]);
  const patch = doc.paths["/v1/links/{code}"].patch;
  assert.equal(patch.operationId, "patchV1LinksByCode");
  assert.deepEqual(patch.security, [{ bearerAuth: [] }]);
  assert.equal(
    patch.parameters.find((p: Doc) => p.name === "authorization"),
    undefined,
    "the credential is a security scheme, not a header parameter",
  );
  assert.deepEqual(doc.components.securitySchemes, {
    bearerAuth: { type: "http", scheme: "bearer", description: "Tenant API key" },
  });
  assert.deepEqual(Object.keys(patch.responses), ["200", "400", "401", "404", "413", "415", "default"]);
  assert.equal(patch.responses["400"].description, "Bad Request: REQUEST_INVALID, REQUEST_MALFORMED");
  assert.equal(patch.responses["401"].description, "Unauthorized: AUTH_MISSING, AUTH_INVALID");
  assert.equal(patch.responses["404"].description, "Not Found: LINK_NOT_FOUND");
  assert.deepEqual(patch.responses["404"].content, {
    "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
  });
  const health = doc.paths["/healthz"].get;
  assert.equal(health.security, undefined, "operator routes need no credentials");
  assert.deepEqual(Object.keys(health.responses), ["200", "default"]);
});

test("a route naming an error code no registry defines fails its registration", async () => {
  const service = createService({ name: "t", version: "0", log: { level: "silent" }, defaultMetrics: false });
  assert.throws(
    () => service.app.get("/x", { schema: { errorCodes: ["NOPE_MISSING"] } }, async () => ({})),
    /error code NOPE_MISSING is in no registry/,
  );
  await service.close();
});

test("defaultOperationId is the method and the path's words", () => {
  assert.equal(
    defaultOperationId("get", "/v1/payments/:id/refunds/:refundId"),
    "getV1PaymentsByIdRefundsByRefundId",
  );
  assert.equal(defaultOperationId("post", "/admin/faults"), "postAdminFaults");
  assert.equal(defaultOperationId("get", "/openapi.json"), "getOpenapiJson");
});
