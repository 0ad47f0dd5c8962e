import assert from "node:assert/strict";
import { test } from "node:test";
import { CasebookError, commonErrors, defineErrors } from "../src/errors.ts";

test("every common error code has a 4xx/5xx status and a message", () => {
  for (const [code, spec] of Object.entries(commonErrors.specs)) {
    const error = commonErrors.create(code as keyof typeof commonErrors.specs);
    assert.equal(error.code, code);
    assert.equal(error.status, spec.status);
    assert.ok(error.message.length > 10, code);
    assert.ok(commonErrors.is(error));
  }
});

test("fields, detail and cause travel with the error", () => {
  const cause = new Error("socket hang up");
  const errors = defineErrors({ WIDGET_NOT_FOUND: { status: 404, message: "No widget with this id." } });
  const error = errors.create("WIDGET_NOT_FOUND", { fields: { id: "w1" }, detail: "No widget w1.", cause });
  assert.ok(error instanceof CasebookError);
  assert.deepEqual(error.fields, { id: "w1" });
  assert.equal(error.message, "No widget w1.");
  assert.equal(error.cause, cause);
  assert.ok(errors.is(error, "WIDGET_NOT_FOUND"));
  assert.ok(!commonErrors.is(error));
});

test("malformed codes and statuses are refused at definition time", () => {
  assert.throws(() => defineErrors({ notacode: { status: 400, message: "x" } }), /AREA_WHAT/);
  assert.throws(() => defineErrors({ AREA_WHAT: { status: 200, message: "x" } }), /4xx or 5xx/);
  assert.throws(() => defineErrors({ AREA_WHAT: { status: 400, message: " " } }), /message/);
});
