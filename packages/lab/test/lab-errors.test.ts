import assert from "node:assert/strict";
import { test } from "node:test";
import { type LabErrorCode, labErrors } from "../src/lab-errors.ts";

test("every lab error code is AREA_WHAT with a 4xx/5xx status and a message that says what to do", () => {
  const codes = Object.keys(labErrors.specs) as LabErrorCode[];
  assert.ok(codes.length > 0);
  for (const code of codes) {
    assert.match(code, /^LAB_[A-Z]+(_[A-Z]+)+$/);
    const error = labErrors.create(code, { fields: { probe: true } });
    assert.equal(error.code, code);
    assert.ok(error.status >= 400 && error.status <= 599);
    assert.ok(error.message.length > 20, `${code} needs a helpful message`);
    assert.ok(labErrors.is(error, code));
    assert.deepEqual(error.fields, { probe: true });
  }
});
