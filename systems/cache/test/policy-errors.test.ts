/**
 * Every error code of the cache's pure mechanisms (and of the hit-ratio bench) is
 * well-formed: AREA_WHAT, a 4xx/5xx status, a message that says what to do, and it
 * round-trips through `is`.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hitRatioBenchErrors } from "../bench/hit-ratio-errors.ts";
import { policyErrors } from "../src/errors.ts";

test("every cache policy and bench error code is created with its status, fields and a message", () => {
  for (const registry of [policyErrors, hitRatioBenchErrors]) {
    for (const [code, spec] of Object.entries(registry.specs)) {
      assert.match(code, /^CACHE_[A-Z0-9_]+$/);
      const error = (registry.create as (c: string, o: object) => Error & { status: number; fields: object })(
        code,
        { fields: { field: "x" } },
      );
      assert.equal(error.status, spec.status);
      assert.equal(error.message, spec.message);
      assert.deepEqual(error.fields, { field: "x" });
      assert.ok((registry.is as (e: unknown) => boolean)(error), code);
    }
  }
});
