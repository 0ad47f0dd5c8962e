/**
 * Per-path error formats: a service whose clients expect another error shape on some paths
 * (an OpenAI-compatible API) gets the same problem — status, code, headers — written in that
 * shape there, and problem+json everywhere else; thrown errors, validation failures, unknown
 * routes and wrong methods alike.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { commonErrors } from "@casebook/kit/errors";
import type { ErrorFormat } from "../../src/http/error-handling.ts";
import { createService, type Service } from "../../src/http/service.ts";

const wrapped: ErrorFormat = {
  pathPrefix: "/v1/",
  contentType: "application/json; charset=utf-8",
  body: (problem) =>
    JSON.stringify({ error: { message: problem.detail, code: problem.code, errors: problem.errors } }),
};

let service: Service;
before(async () => {
  service = createService({
    name: "formats",
    version: "0",
    log: { level: "silent" },
    errorFormats: [wrapped],
  });
  service.app.post(
    "/v1/things",
    { schema: { body: { type: "object", required: ["name"], properties: { name: { type: "string" } } } } },
    async () => ({ ok: true }),
  );
  service.app.get("/v1/busy", async () => {
    throw commonErrors.create("SERVICE_UNAVAILABLE", { fields: { retryAfterMs: 2_000 } });
  });
  service.app.get("/other/busy", async () => {
    throw commonErrors.create("SERVICE_UNAVAILABLE");
  });
  await service.app.ready();
});
after(() => service.close());

test("a thrown error under the prefix is in the format, with the problem's status and headers", async () => {
  const res = await service.app.inject({ url: "/v1/busy" });
  assert.equal(res.statusCode, 503);
  assert.match(String(res.headers["content-type"]), /^application\/json/);
  assert.equal(res.headers["retry-after"], "2");
  assert.ok(res.headers["x-request-id"]);
  assert.equal(res.json().error.code, "SERVICE_UNAVAILABLE");
});

test("a validation failure under the prefix keeps its field errors in the format", async () => {
  const res = await service.app.inject({ method: "POST", url: "/v1/things", payload: {} });
  assert.equal(res.statusCode, 400);
  assert.deepEqual(
    res.json().error.errors.map((e: { field: string }) => e.field),
    ["/body/name"],
  );
});

test("unknown routes and wrong methods under the prefix are in the format too", async () => {
  const missing = await service.app.inject({ url: "/v1/nothing" });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().error.code, "RESOURCE_NOT_FOUND");
  const wrong = await service.app.inject({ method: "DELETE", url: "/v1/things" });
  assert.equal(wrong.statusCode, 405);
  assert.equal(wrong.headers.allow, "POST");
  assert.equal(wrong.json().error.code, "REQUEST_METHOD_NOT_ALLOWED");
});

test("outside the prefix errors stay problem+json", async () => {
  const res = await service.app.inject({ url: "/other/busy" });
  assert.equal(res.statusCode, 503);
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  assert.equal(res.json().code, "SERVICE_UNAVAILABLE");
});
