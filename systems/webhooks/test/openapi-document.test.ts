/**
 * The webhooks API's /openapi.json as a client generator reads it: valid OpenAPI, every
 * route (the admin API included) documented with a 2xx schema, on embedded PGlite.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { main } from "../src/main.ts";

test("every route of webhooks is in a valid /openapi.json with a 2xx schema", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-webhooks-openapi-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main({
    PORT: "0",
    CASEBOOK_DATA: dataDir,
    LOG_LEVEL: "silent",
    WEBHOOKS_WORKERS: "off",
    WEBHOOKS_ADMIN_TOKEN: "admin-token-for-the-openapi-test-0123456789",
  });
  try {
    assert.deepEqual(await checkOpenApiDocument(running.url, running.service.routes), []);
  } finally {
    await running.close();
  }
});
