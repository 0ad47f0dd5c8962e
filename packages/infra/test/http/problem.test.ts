import assert from "node:assert/strict";
import { test } from "node:test";
import { commonErrors } from "@casebook/kit/errors";
import { httpErrors } from "../../src/http/http-errors.ts";
import {
  describeError,
  fieldErrors,
  maxFieldErrors,
  problemTitle,
  problemType,
  retryAfterSeconds,
  serializeProblem,
  toProblem,
} from "../../src/http/problem.ts";

const at = { instance: "/v1/things", requestId: "r-1" };

test("every http error code has a 4xx/5xx status, a message, and maps to its own problem", () => {
  for (const [code, spec] of Object.entries(httpErrors.specs)) {
    const error = httpErrors.create(code as keyof typeof httpErrors.specs);
    assert.ok(spec.message.length > 20, code);
    const problem = toProblem(describeError(error), at);
    assert.equal(problem.status, spec.status, code);
    assert.equal(problem.code, code);
    assert.equal(problem.detail, spec.message);
    assert.equal(problem.type, problemType(code));
    assert.ok(!(code in commonErrors.specs), `${code} duplicates commonErrors`);
  }
});

test("type is a stable URN and title a stable summary per code", () => {
  assert.equal(problemType("REQUEST_TOO_LARGE"), "urn:casebook:problem:request-too-large");
  assert.equal(problemTitle("REQUEST_TOO_LARGE"), "Request too large");
});

test("Retry-After is whole seconds, rounded up, never negative", () => {
  assert.equal(retryAfterSeconds(0), 0);
  assert.equal(retryAfterSeconds(1), 1);
  assert.equal(retryAfterSeconds(1_000), 1);
  assert.equal(retryAfterSeconds(1_001), 2);
  assert.equal(retryAfterSeconds(-5), 0);
  const parts = describeError(
    commonErrors.create("SERVICE_UNAVAILABLE", { fields: { retryAfterMs: 2_500 } }),
  );
  assert.deepEqual(parts.headers, { "retry-after": "3" });
  const noRetry = describeError(
    commonErrors.create("SERVICE_UNAVAILABLE", { fields: { retryAfterMs: "soon" } }),
  );
  assert.deepEqual(noRetry.headers, {});
});

test("fields are extension members but cannot overwrite the reserved ones", () => {
  const error = commonErrors.create("AUTH_INVALID", {
    fields: { status: 200, code: "OK", type: "x", requestId: "forged", keyPrefix: "ck_12" },
  });
  const problem = toProblem(describeError(error), at);
  assert.equal(problem.status, 401);
  assert.equal(problem.code, "AUTH_INVALID");
  assert.equal(problem.requestId, "r-1");
  assert.equal(problem.type, "urn:casebook:problem:auth-invalid");
  assert.equal(problem.keyPrefix, "ck_12");
});

test("ajv errors name the field, including missing and unexpected properties", () => {
  const errors = fieldErrors({
    validationContext: "body",
    validation: [
      { instancePath: "/cost", keyword: "minimum", params: { limit: 0 }, message: "must be >= 0" },
      {
        instancePath: "",
        keyword: "required",
        params: { missingProperty: "name" },
        message: "must have required property 'name'",
      },
      {
        instancePath: "/tags/0",
        keyword: "additionalProperties",
        params: { additionalProperty: "a/b" },
        message: "x",
      },
    ],
  });
  assert.deepEqual(errors, [
    { field: "/body/cost", message: "must be >= 0" },
    { field: "/body/name", message: "must have required property 'name'" },
    { field: "/body/tags/0/a~1b", message: "x" },
  ]);
  const many = Array.from({ length: 500 }, (_, i) => ({ instancePath: `/${i}`, message: "bad" }));
  assert.equal(fieldErrors({ validationContext: "querystring", validation: many }).length, maxFieldErrors);
});

test("Fastify client errors keep their meaning; unknown errors become a generic 500", () => {
  const fastifyError = (code: string, statusCode: number, message: string) =>
    Object.assign(new Error(message), { code, statusCode });
  assert.equal(
    describeError(fastifyError("FST_ERR_CTP_BODY_TOO_LARGE", 413, "x"), { bodyLimitBytes: 10 }).fields
      .limitBytes,
    10,
  );
  assert.equal(
    describeError(fastifyError("FST_ERR_CTP_EMPTY_JSON_BODY", 400, "empty")).code,
    "REQUEST_MALFORMED",
  );
  const plugin = describeError(fastifyError("PLUGIN_SAYS_NO", 429, "Rate limit exceeded"));
  assert.deepEqual(
    [plugin.status, plugin.code, plugin.detail],
    [429, "REQUEST_REJECTED", "Rate limit exceeded"],
  );
  for (const thrown of [
    new Error("SELECT * FROM secrets"),
    fastifyError("X", 502, "upstream 10.0.0.1"),
    "a string",
    null,
  ]) {
    const parts = describeError(thrown);
    assert.deepEqual(
      [parts.status, parts.code, parts.detail],
      [500, "INTERNAL_ERROR", commonErrors.specs.INTERNAL_ERROR.message],
    );
  }
});

test("serializeProblem survives bigints and cycles in fields", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const withBigint = toProblem(
    describeError(commonErrors.create("REQUEST_INVALID", { fields: { balance: 10n } })),
    at,
  );
  assert.equal(JSON.parse(serializeProblem(withBigint)).balance, "10");
  const withCycle = toProblem(
    describeError(commonErrors.create("REQUEST_INVALID", { fields: { cyclic } })),
    at,
  );
  const parsed = JSON.parse(serializeProblem(withCycle));
  assert.equal(parsed.code, "REQUEST_INVALID");
  assert.equal(parsed.cyclic, undefined);
});
