import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually } from "../src/eventually.ts";
import { labErrors } from "../src/lab-errors.ts";

test("eventually resolves the first accepted value, retrying probes that throw", async () => {
  let calls = 0;
  const value = await eventually(
    () => {
      calls++;
      if (calls < 3) throw new Error(`not yet ${calls}`);
      return calls >= 5 ? calls : undefined;
    },
    { intervalMs: 1 },
  );
  assert.equal(value, 5);
  assert.equal(
    await eventually(async () => 0, { accept: (n) => n === 0 }),
    0,
    "accept decides, not truthiness",
  );
  assert.equal(await eventually(() => true, { intervalMs: 0 }), true);
});

test("eventually fails after timeoutMs naming what was awaited, the last value, and the last error as cause", async () => {
  let calls = 0;
  const started = performance.now();
  await assert.rejects(
    eventually(
      () => {
        calls++;
        if (calls % 2 === 0) throw new Error("connection refused");
        return false;
      },
      { what: "the engine to answer", timeoutMs: 100, intervalMs: 5 },
    ),
    (error: unknown) => {
      assert.ok(labErrors.is(error, "LAB_WAIT_TIMEOUT"));
      assert.match(error.message, /timed out after 100 ms \(\d+ probes\) waiting for the engine to answer/);
      assert.match(error.message, /last value false/);
      assert.match(error.message, /connection refused/);
      assert.equal((error.cause as Error).message, "connection refused");
      return true;
    },
  );
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 100 && elapsed < 2_000, `bounded: ${elapsed} ms`);
  assert.ok(calls >= 3);
});
