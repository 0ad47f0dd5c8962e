import nodeAssert from "node:assert/strict";
import { test } from "node:test";
import { AssertionError, assert } from "../src/assert.ts";
import { CasebookError } from "../src/errors.ts";
import { kitErrors } from "../src/kit-errors.ts";

test("assert passes on a truthy condition and narrows its type", () => {
  const value: string | undefined = "x" as string | undefined;
  assert(value !== undefined, "value is set");
  nodeAssert.equal(value.length, 1); // compiles only because assert narrowed value to string
});

test("a failed assertion throws AssertionError: a kit error ASSERTION_FAILED (500) with the message and fields", () => {
  nodeAssert.throws(
    () => assert(1 > 2, "one is above two", { left: 1, right: 2 }),
    (error: unknown) =>
      error instanceof AssertionError &&
      error instanceof CasebookError &&
      kitErrors.is(error, "ASSERTION_FAILED") &&
      error.status === 500 &&
      error.name === "AssertionError" &&
      error.message === "assertion failed: one is above two" &&
      error.fields.left === 1,
  );
  for (const falsy of [false, 0, "", null, undefined, Number.NaN]) {
    nodeAssert.throws(() => assert(falsy, "falsy"), AssertionError);
  }
});
