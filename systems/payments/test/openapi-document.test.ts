/**
 * Payments' and its acquirer simulator's /openapi.json, as a client generator reads them:
 * valid OpenAPI, every registered route documented with a 2xx schema (lab's
 * checkOpenApiDocument), payments on embedded PGlite in a temporary CASEBOOK_DATA.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { main } from "../src/main.ts";
import { main as acquirerMain } from "../src/sim/acquirer-main.ts";

test("every route of payments is in a valid /openapi.json with a 2xx schema", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-openapi-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main({ PORT: "0", CASEBOOK_DATA: dataDir, LOG_LEVEL: "silent" });
  try {
    assert.deepEqual(await checkOpenApiDocument(running.url, running.service.routes), []);
    // biome-ignore lint/suspicious/noExplicitAny: the document is JSON walked by key
    const doc: any = await (await fetch(`${running.url}/openapi.json`)).json();
    const create = doc.paths["/v1/payments"].post;
    assert.deepEqual(create.security, [{ bearerAuth: [] }]);
    assert.deepEqual(create.requestBody.content["application/json"].schema.required, [
      "amountMinor",
      "currency",
      "cardToken",
    ]);
    assert.match(create.responses["409"].description, /PAYMENTS_IDEMPOTENCY_IN_PROGRESS/);
    assert.match(create.responses["422"].description, /PAYMENTS_IDEMPOTENCY_MISMATCH/);
    const refund = doc.paths["/v1/payments/{id}/refunds"].post;
    assert.deepEqual(Object.keys(refund.responses["422"].content).sort(), [
      "application/json",
      "application/problem+json",
    ]);
  } finally {
    await running.close();
  }
});

test("every route of the acquirer simulator is in a valid /openapi.json with a 2xx schema", async () => {
  const running = await acquirerMain({ PORT: "0", LOG_LEVEL: "silent" });
  try {
    assert.deepEqual(await checkOpenApiDocument(running.url, running.sim.service.routes), []);
  } finally {
    await running.close();
  }
});
