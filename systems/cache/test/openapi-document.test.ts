/**
 * The cache node's HTTP side (ops, landing, API reference; RESP is on its own port) as a
 * client generator reads it: valid OpenAPI, every route documented with a 2xx schema.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { main } from "../src/main.ts";

test("every HTTP route of a cache node is in a valid /openapi.json with a 2xx schema", async () => {
  const node = await main({ CACHE_PORT: "0", PORT: "0", LOG_LEVEL: "silent" });
  try {
    assert.deepEqual(await checkOpenApiDocument(node.url, node.service.routes), []);
  } finally {
    await node.close();
  }
});
