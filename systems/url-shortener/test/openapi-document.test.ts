/**
 * url-shortener's /openapi.json as a client generator reads it: valid OpenAPI, every
 * registered route documented with a 2xx schema (lab's checkOpenApiDocument) — the redirect
 * route `GET /{code}` is hidden (it answers 3xx and HTML pages, not JSON) and documented in
 * the README — on embedded PGlite with the admin API on.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
import { apiWorld } from "./api-fixture.ts";

test("every route of url-shortener is in a valid /openapi.json with a 2xx schema", async (t) => {
  const world = await apiWorld();
  t.after(() => world.close());
  assert.deepEqual(await checkOpenApiDocument(world.running.url, world.running.service.routes), []);
  // biome-ignore lint/suspicious/noExplicitAny: the document is JSON walked by key
  const doc: any = await (await fetch(`${world.running.url}/openapi.json`)).json();
  const create = doc.paths["/v1/links"].post;
  assert.deepEqual(create.security, [{ bearerAuth: [] }]);
  assert.deepEqual(create.requestBody.content["application/json"].schema.required, ["url"]);
  assert.match(create.responses["409"].description, /LINK_ALIAS_TAKEN/);
  assert.equal(doc.paths["/{code}"], undefined, "the redirect is not a JSON operation");
});
