/** Every code of the registry: the AREA_WHAT shape, an HTTP status, a message that says what to do. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type ErrorCode, errors } from "../src/errors.ts";

test("every error code has the AREA_WHAT shape, a 4xx/5xx status and a message", () => {
  for (const code of Object.keys(errors.specs) as ErrorCode[]) {
    assert.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/);
    const error = errors.create(code);
    assert.ok(error.status >= 400 && error.status <= 599, code);
    assert.ok(error.message.length > 20, code);
    assert.ok(errors.is(error, code), code);
  }
});
