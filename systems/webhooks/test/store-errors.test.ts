/** The store's error registry: every code well-formed, with a 4xx/5xx status and a message, answered as problem+json. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { commonErrors } from "@casebook/kit/errors";
import { storeErrors } from "../src/errors.ts";

test("no store code is also a common code, and every one is WEBHOOK_*", () => {
  for (const code of Object.keys(storeErrors.specs)) {
    assert.match(code, /^WEBHOOK_[A-Z0-9_]+$/);
    assert.ok(!(code in commonErrors.specs), `${code} is defined twice`);
  }
});

test("every code answers as problem+json with its status, and carries its fields", async () => {
  const service = createService({
    name: "webhooks-store-errors",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: [storeErrors],
  });
  const codes = Object.entries(storeErrors.specs) as [
    keyof typeof storeErrors.specs,
    { status: number; message: string },
  ][];
  service.app.get<{ Querystring: { i: number } }>("/raise", async (request) => {
    const [code] = codes[Number(request.query.i)]!;
    throw storeErrors.create(code, { fields: { probe: "yes" } });
  });
  try {
    for (const [i, [code, spec]] of codes.entries()) {
      assert.ok(spec.message.trim().length > 10, code);
      const res = await service.app.inject({ url: `/raise?i=${i}` });
      assert.equal(res.statusCode, spec.status, code);
      assert.match(String(res.headers["content-type"]), /application\/problem\+json/, code);
      const body = res.json() as Record<string, unknown>;
      assert.equal(body.code, code);
    }
  } finally {
    await service.app.close();
  }
});
