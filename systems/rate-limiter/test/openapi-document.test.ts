/**
 * The rate limiter's /openapi.json, as a client generator reads it: valid OpenAPI, every
 * route documented with a 2xx schema (lab's checkOpenApiDocument), on the embedded store.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { main } from "../src/main.ts";

test("every route of the rate limiter is in a valid /openapi.json with a 2xx schema", async () => {
  const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
  try {
    assert.deepEqual(await checkOpenApiDocument(running.url, running.service.routes), []);
  } finally {
    await running.close();
  }
});
