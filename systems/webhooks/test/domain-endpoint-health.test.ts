/** WH-16: an endpoint's health — which results count against it, and when client errors are persistent. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkQuarantineBounds,
  DEFAULT_QUARANTINE_BOUNDS,
  healthSignal,
  healthWriteNeeded,
  isPersistentClientError,
} from "../src/domain/endpoint-health.ts";

const HOUR_MS = 3_600_000;

test("DNS, connection, timeout, 5xx and throttling failures are transient; 3xx, 4xx, 410 and refused addresses are client errors", () => {
  for (const cls of ["dns_error", "connection_error", "timeout_connect", "timeout_headers", "timeout_body"])
    assert.equal(healthSignal(cls), "transient_error", cls);
  for (const cls of ["5xx", "throttled", "invalid_status", "timeout_deadline"])
    assert.equal(healthSignal(cls), "transient_error", cls);
  for (const cls of ["3xx", "4xx", "410", "address_refused"])
    assert.equal(healthSignal(cls), "client_error", cls);
  assert.equal(healthSignal("2xx"), "success");
});

test("persistent means both bounds: at least 5 in a row AND the first at least 1 h before", () => {
  const { clientErrorsMin, spanMsMin } = DEFAULT_QUARANTINE_BOUNDS;
  assert.deepEqual([clientErrorsMin, spanMsMin], [5, HOUR_MS]);
  const at = (clientErrors: number, spanMs: number) =>
    isPersistentClientError({ clientErrors, clientErrorsSinceMs: 1_000 }, 1_000 + spanMs);
  assert.equal(at(5, HOUR_MS), true, "exactly the bounds");
  assert.equal(at(5, HOUR_MS - 1), false, "an hour less a millisecond");
  assert.equal(at(4, 24 * HOUR_MS), false, "four over a day");
  assert.equal(at(500, 22_000), false, "the issue's burst: many within 22 s");
  assert.equal(isPersistentClientError({ clientErrors: 0, clientErrorsSinceMs: null }, 10 * HOUR_MS), false);
  assert.equal(
    isPersistentClientError({ clientErrors: 2, clientErrorsSinceMs: 0 }, 60_000, {
      clientErrorsMin: 2,
      spanMsMin: 0,
    }),
    true,
    "bounds are the caller's to choose",
  );
});

test("health writes only when the attempt changes something: a busy healthy endpoint writes nothing", () => {
  const healthy = { status: "active", clientErrors: 0 } as const;
  const failing = { status: "failing", clientErrors: 0 } as const;
  const streaking = { status: "failing", clientErrors: 3 } as const;
  assert.equal(healthWriteNeeded("success", healthy), false);
  assert.equal(healthWriteNeeded("success", failing), true, "back to active");
  assert.equal(healthWriteNeeded("transient_error", healthy), true, "active → failing");
  assert.equal(healthWriteNeeded("transient_error", failing), false, "already failing: nothing changes");
  assert.equal(healthWriteNeeded("transient_error", streaking), true, "ends the client-error streak");
  assert.equal(healthWriteNeeded("client_error", failing), true, "one more in the streak");
});

test("quarantine bounds are checked", () => {
  assert.throws(() => checkQuarantineBounds({ clientErrorsMin: 0, spanMsMin: 0 }), RangeError);
  assert.throws(() => checkQuarantineBounds({ clientErrorsMin: 1, spanMsMin: -1 }), RangeError);
  assert.throws(() => checkQuarantineBounds({ clientErrorsMin: 1.5, spanMsMin: 0 }), RangeError);
  assert.deepEqual(checkQuarantineBounds({ clientErrorsMin: 1, spanMsMin: 0 }), {
    clientErrorsMin: 1,
    spanMsMin: 0,
  });
});
