/** The delivery core's error registry: every code well-formed, unique, and answered as problem+json. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { commonErrors } from "@casebook/kit/errors";
import { deliveryErrors } from "../src/errors.ts";

test("every delivery error code is WEBHOOK_*, has a real message, and clashes with no common code", () => {
  const codes = Object.entries(deliveryErrors.specs);
  assert.ok(codes.length >= 10);
  for (const [code, spec] of codes) {
    assert.match(code, /^WEBHOOK_[A-Z0-9_]+$/);
    assert.ok(spec.message.trim().length > 20, code);
    assert.equal(code in commonErrors.specs, false, code);
  }
});

test("every delivery error code answers as problem+json with its status and code", async () => {
  const service = createService({
    name: "webhooks-delivery-errors",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: [deliveryErrors],
  });
  const codes = Object.keys(deliveryErrors.specs) as (keyof typeof deliveryErrors.specs)[];
  service.app.get<{ Querystring: { i: number } }>("/raise", async (request) => {
    throw deliveryErrors.create(codes[Number(request.query.i)]!, { fields: { probe: true } });
  });
  try {
    for (const [i, code] of codes.entries()) {
      const res = await service.app.inject({ url: `/raise?i=${i}` });
      assert.equal(res.statusCode, deliveryErrors.specs[code].status, code);
      assert.match(String(res.headers["content-type"]), /application\/problem\+json/);
      assert.equal(res.json().code, code);
    }
  } finally {
    await service.close();
  }
});
