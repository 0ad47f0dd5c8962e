/** The merged registry list: every code defined once, well-formed, with a 4xx/5xx status and a message. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { commonErrors } from "@casebook/kit/errors";
import { kitErrors } from "@casebook/kit/kit-errors";
import { paymentsErrorRegistries } from "../src/errors.ts";

test("no code is defined in two registries (nor in commonErrors)", () => {
  const owners = new Map<string, number>();
  for (const [index, registry] of [commonErrors, ...paymentsErrorRegistries].entries()) {
    for (const code of Object.keys(registry.specs)) {
      assert.equal(owners.get(code), undefined, `${code} is defined twice`);
      owners.set(code, index);
    }
  }
  assert.ok(owners.has("LEDGER_ACCOUNT_NOT_FOUND") && owners.has("PAYMENTS_IDEMPOTENCY_IN_PROGRESS"));
  assert.ok(owners.has("PAYMENTS_ACCOUNT_NOT_FOUND") && owners.has("SQL_UNAVAILABLE"));
});

test("every code has a status, a message and answers as problem+json with that status", async () => {
  const service = createService({
    name: "payments-errors",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: paymentsErrorRegistries,
  });
  const codes = paymentsErrorRegistries.flatMap((registry) =>
    Object.entries(registry.specs).map(([code, spec]) => ({ registry, code, spec })),
  );
  service.app.get<{ Querystring: { i: number } }>("/raise", async (request) => {
    const { registry, code } = codes[Number(request.query.i)]!;
    throw registry.create(code);
  });
  try {
    for (const [i, { registry, code, spec }] of codes.entries()) {
      // kit's codes (GROUP_COMMIT_QUEUE_FULL…) keep kit's names; every other is payments' own area.
      if (registry !== kitErrors) assert.match(code, /^(PAYMENTS|LEDGER|SQL|OUTBOX)_[A-Z0-9_]+$/);
      assert.ok(spec.message.trim().length > 10, code);
      const res = await service.app.inject({ url: `/raise?i=${i}` });
      assert.equal(res.statusCode, spec.status, code);
      assert.equal(res.json().code, code);
    }
  } finally {
    await service.close();
  }
});
