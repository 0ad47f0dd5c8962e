import assert from "node:assert/strict";
import { test } from "node:test";
import { mayHaveBeenProcessed, outboundErrors, phaseOf } from "../../src/http/outbound-errors.ts";

test("every outbound error code has a 4xx/5xx status and a message saying what to do", () => {
  for (const [code, spec] of Object.entries(outboundErrors.specs)) {
    const error = outboundErrors.create(code as keyof typeof outboundErrors.specs, {
      fields: { phase: "body" },
    });
    assert.equal(error.code, code);
    assert.equal(error.status, spec.status);
    assert.match(code, /^OUTBOUND_/);
    assert.ok(error.message.length > 20, code);
  }
});

test("the phase decides whether the far side may have acted: only headers and body", () => {
  const at = (phase: string) => outboundErrors.create("OUTBOUND_DEADLINE_EXCEEDED", { fields: { phase } });
  assert.deepEqual(
    ["policy", "dns", "connect", "headers", "body"].map((phase) => [
      phaseOf(at(phase)),
      mayHaveBeenProcessed(at(phase)),
    ]),
    [
      ["policy", false],
      ["dns", false],
      ["connect", false],
      ["headers", true],
      ["body", true],
    ],
  );
  const cause = new Error("read ECONNRESET");
  const error = outboundErrors.create("OUTBOUND_CONNECTION_FAILED", {
    fields: { phase: "body", code: "ECONNRESET" },
    cause,
  });
  assert.equal(error.cause, cause, "cause as { cause }");
});
