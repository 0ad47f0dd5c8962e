/**
 * The gateway's /openapi.json as a client generator reads it: valid OpenAPI, every route (the
 * admin API included) documented with a 2xx schema, on embedded PGlite.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { startGateway } from "./gateway-fixture.ts";

test("every route of llm-gateway is in a valid /openapi.json with a 2xx schema", async () => {
  const f = await startGateway({
    env: { LLM_GATEWAY_ADMIN_TOKEN: "admin-token-for-the-openapi-test-0123456789" },
  });
  try {
    assert.deepEqual(await checkOpenApiDocument(f.gateway.url, f.gateway.service.routes), []);
  } finally {
    await f.close();
  }
});
