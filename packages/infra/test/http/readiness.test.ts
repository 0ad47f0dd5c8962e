import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { defineErrors } from "@casebook/kit/errors";
import { maxCheckErrorChars, runReadinessChecks } from "../../src/http/readiness.ts";

test("all checks passing is ok, with each check's duration from the injected clock", async () => {
  const clock = new ManualClock();
  const report = await runReadinessChecks(
    {
      database: async () => {
        clock.advance(7);
      },
      redis: async () => {},
    },
    { timeoutMs: 1_000, clock },
  );
  assert.equal(report.status, "ok");
  assert.deepEqual(report.checks.database, { status: "ok", durationMs: 7 });
  assert.equal(report.checks.redis?.status, "ok");
});

test("no checks at all is ready", async () => {
  assert.deepEqual(await runReadinessChecks({}, { timeoutMs: 10, clock: new ManualClock() }), {
    status: "ok",
    checks: {},
  });
});

test("a rejecting, a throwing and a hanging check each fail with the reason; the others still pass", async () => {
  let abortReason: unknown;
  const report = await runReadinessChecks(
    {
      ok: async () => {},
      rejects: async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
      },
      throwsSync: () => {
        throw new TypeError("not a function");
      },
      hangs: (signal) =>
        new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            abortReason = signal.reason;
            reject(signal.reason);
          }),
        ),
    },
    { timeoutMs: 25, clock: new ManualClock() },
  );
  assert.equal(report.status, "unavailable");
  assert.equal(report.checks.ok?.status, "ok");
  assert.equal(report.checks.rejects?.error, "Error: connect ECONNREFUSED 127.0.0.1:5432");
  assert.equal(report.checks.throwsSync?.error, "TypeError: not a function");
  assert.equal(report.checks.hangs?.error, "TimeoutError: timed out after 25 ms");
  assert.ok(abortReason instanceof Error, "the hung check's signal was aborted");
});

test("a typed error is described by its message alone, written for the operator", async () => {
  const errors = defineErrors({ DEMO_DOWN: { status: 503, message: "the demo engine is down" } });
  const report = await runReadinessChecks(
    {
      typed: async () => {
        throw errors.create("DEMO_DOWN", { detail: "demo at 127.0.0.1:1 not reachable: connection refused" });
      },
    },
    { timeoutMs: 1_000, clock: new ManualClock() },
  );
  assert.equal(report.checks.typed?.error, "demo at 127.0.0.1:1 not reachable: connection refused");
});

test("a check that never settles and ignores its signal still times out", async () => {
  const report = await runReadinessChecks(
    { deaf: () => new Promise(() => {}) },
    { timeoutMs: 10, clock: new ManualClock() },
  );
  assert.equal(report.checks.deaf?.status, "failed");
});

test("long error messages are cut to maxCheckErrorChars", async () => {
  const report = await runReadinessChecks(
    {
      verbose: async () => {
        throw new Error("x".repeat(5_000));
      },
    },
    { timeoutMs: 100, clock: new ManualClock() },
  );
  assert.equal(report.checks.verbose?.error?.length, maxCheckErrorChars);
});
