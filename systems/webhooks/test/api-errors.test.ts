/** The API's registry list: no code defined in two registries, none shadowing a common code, all answered as problem+json. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { CasebookError, commonErrors } from "@casebook/kit/errors";
import { atField, pointAtNamedField } from "../src/api/field-errors.ts";
import { storeErrors, webhooksErrorRegistries } from "../src/errors.ts";

test("every code of the API's registries is defined once and is not a common code", () => {
  const seen = new Map<string, number>();
  for (const [i, registry] of webhooksErrorRegistries.entries()) {
    for (const code of Object.keys(registry.specs)) {
      assert.equal(seen.has(code), false, `${code} is in registries ${seen.get(code)} and ${i}`);
      assert.equal(code in commonErrors.specs, false, code);
      seen.set(code, i);
    }
  }
  assert.ok(seen.has("WEBHOOK_REPLAY_PAYLOAD_EXPIRED") && seen.has("WEBHOOK_URL_FORBIDDEN"));
});

test("a service built with them answers each code as problem+json with its status", async () => {
  const service = createService({
    name: "webhooks-api-errors",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: webhooksErrorRegistries,
  });
  const all = webhooksErrorRegistries.flatMap((r) => Object.keys(r.specs).map((code) => ({ r, code })));
  service.app.get<{ Querystring: { i: number } }>("/raise", async (request) => {
    const { r, code } = all[Number(request.query.i)]!;
    throw r.create(code);
  });
  try {
    for (const [i, { r, code }] of all.entries()) {
      const res = await service.app.inject({ url: `/raise?i=${i}` });
      assert.equal(res.statusCode, r.specs[code]!.status, code);
      assert.match(String(res.headers["content-type"]), /application\/problem\+json/);
      assert.equal(res.json().code, code);
    }
  } finally {
    await service.close();
  }
});

test("field pointers: a store error naming its field keeps its code and gains errors[].field; 5xx and others pass", () => {
  const named = pointAtNamedField(
    storeErrors.create("WEBHOOK_SUBSCRIPTION_INVALID", { fields: { field: "eventTypes" } }),
    "/body",
  ) as CasebookError;
  assert.equal(named.code, "WEBHOOK_SUBSCRIPTION_INVALID");
  assert.deepEqual(named.fields.errors, [{ field: "/body/eventTypes", message: named.message }]);
  const cursor = pointAtNamedField(
    storeErrors.create("WEBHOOK_CURSOR_INVALID"),
    "/querystring",
  ) as CasebookError;
  assert.deepEqual(
    (cursor.fields.errors as { field: string }[]).map((e) => e.field),
    ["/querystring/cursor"],
  );
  const server = storeErrors.create("WEBHOOK_LEASE_TOO_SHORT");
  assert.equal(atField(server, "/body/x"), server, "a 5xx is not the caller's field");
  const plain = new Error("boom");
  assert.equal(pointAtNamedField(plain, "/body"), plain);
  assert.ok(atField(commonErrors.create("REQUEST_INVALID"), "/body/y") instanceof CasebookError);
});
