import assert from "node:assert/strict";
import { test } from "node:test";
import { CasebookError } from "../src/errors.ts";
import { type KitErrorCode, kitErrors } from "../src/kit-errors.ts";

test("every kit error code has a 4xx/5xx status, a message, and round-trips through is()", () => {
  for (const code of Object.keys(kitErrors.specs) as KitErrorCode[]) {
    const error = kitErrors.create(code, { fields: { probe: 1 } });
    assert.ok(error instanceof CasebookError);
    assert.equal(error.code, code);
    assert.equal(error.status, kitErrors.specs[code].status);
    assert.ok(error.message.length > 20, code);
    assert.ok(kitErrors.is(error, code));
  }
});
