import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type BreakerStateChange,
  CircuitBreaker,
  type CircuitBreakerOptions,
} from "../src/circuit-breaker.ts";
import { ManualClock } from "../src/clock.ts";
import { kitErrors } from "../src/kit-errors.ts";

function setup(overrides: Partial<CircuitBreakerOptions> = {}) {
  const clock = new ManualClock(1_000_000);
  const breaker = new CircuitBreaker({
    name: "smtp",
    clock,
    failureThreshold: 3,
    openDurationMs: 10_000,
    ...overrides,
  });
  const changes: BreakerStateChange[] = [];
  breaker.onStateChange((c) => changes.push(c));
  const transitions = () => changes.map((c) => `${c.from}->${c.to}:${c.reason}`);
  return { clock, breaker, changes, transitions };
}

function fail(breaker: CircuitBreaker, times: number): void {
  for (let i = 0; i < times; i++) {
    assert.ok(breaker.canRequest());
    breaker.onFailure();
  }
}

const boom = () => Promise.reject(new Error("boom"));

test("closed stays closed below the consecutive-failure threshold; a success resets the count", () => {
  const { breaker, changes } = setup();
  fail(breaker, 2);
  assert.ok(breaker.canRequest());
  breaker.onSuccess();
  fail(breaker, 2);
  assert.equal(breaker.state, "closed");
  assert.equal(breaker.snapshot().consecutiveFailures, 2);
  assert.equal(changes.length, 0);
});

test("closed -> open after failureThreshold consecutive failures; open answers false at once", () => {
  const { breaker, transitions, changes } = setup();
  fail(breaker, 3);
  assert.equal(breaker.state, "open");
  assert.deepEqual(transitions(), ["closed->open:consecutive-failures"]);
  assert.equal(changes[0]!.name, "smtp");
  assert.equal(changes[0]!.atMs, 1_000_000);
  for (let i = 0; i < 100; i++) assert.equal(breaker.canRequest(), false);
  assert.equal(breaker.retryAfterMs(), 10_000);
});

test("open -> half-open once openDurationMs has elapsed, not before", () => {
  const { clock, breaker, transitions } = setup();
  fail(breaker, 3);
  clock.advance(9_999);
  assert.equal(breaker.state, "open");
  assert.equal(breaker.retryAfterMs(), 1);
  clock.advance(1);
  assert.equal(breaker.state, "half-open");
  assert.deepEqual(transitions(), ["closed->open:consecutive-failures", "open->half-open:open-elapsed"]);
});

test("half-open admits at most maxProbes concurrent probes", () => {
  const { clock, breaker } = setup({ maxProbes: 2 });
  fail(breaker, 3);
  clock.advance(10_000);
  assert.equal(breaker.canRequest(), true);
  assert.equal(breaker.canRequest(), true);
  assert.equal(breaker.canRequest(), false, "third probe refused");
  assert.equal(breaker.snapshot().probesInFlight, 2);
  assert.equal(breaker.retryAfterMs(), 10_000, "until the oldest probe would time out");
});

test("half-open -> closed when a probe succeeds; counters start fresh", () => {
  const { clock, breaker, transitions } = setup();
  fail(breaker, 3);
  clock.advance(10_000);
  assert.ok(breaker.canRequest());
  breaker.onSuccess();
  assert.equal(breaker.state, "closed");
  assert.equal(breaker.snapshot().consecutiveFailures, 0);
  assert.equal(transitions().at(-1), "half-open->closed:probe-succeeded");
  fail(breaker, 2);
  assert.equal(breaker.state, "closed", "needs a full threshold again");
});

test("half-open -> open when a probe fails, for a fresh openDurationMs", () => {
  const { clock, breaker, transitions } = setup();
  fail(breaker, 3);
  clock.advance(10_000);
  assert.ok(breaker.canRequest());
  clock.advance(500);
  breaker.onFailure();
  assert.equal(breaker.state, "open");
  assert.equal(transitions().at(-1), "half-open->open:probe-failed");
  assert.equal(breaker.retryAfterMs(), 10_000);
  clock.advance(9_999);
  assert.equal(breaker.canRequest(), false);
  clock.advance(1);
  assert.equal(breaker.canRequest(), true);
});

test("a probe that never reports times out after probeTimeoutMs and re-opens the breaker", () => {
  const { clock, breaker, transitions } = setup({ probeTimeoutMs: 2_000 });
  fail(breaker, 3);
  clock.advance(10_000);
  assert.ok(breaker.canRequest());
  assert.equal(breaker.canRequest(), false);
  clock.advance(1_999);
  assert.equal(breaker.state, "half-open");
  clock.advance(1);
  assert.equal(breaker.state, "open");
  assert.equal(transitions().at(-1), "half-open->open:probe-timed-out");
  breaker.onSuccess(); // the lost probe finally reports: too late, ignored
  assert.equal(breaker.state, "open");
});

test("an outcome reported while open, or half-open with no probe out, changes nothing", () => {
  const { clock, breaker, changes } = setup();
  fail(breaker, 3);
  breaker.onSuccess();
  breaker.onFailure();
  assert.equal(breaker.state, "open");
  clock.advance(10_000);
  assert.equal(breaker.state, "half-open");
  breaker.onSuccess(); // no probe admitted: a late result of a call from before opening
  assert.equal(breaker.state, "half-open");
  assert.equal(changes.length, 2);
});

test("run() rejects immediately with BREAKER_OPEN (503, retryAfterMs) without calling fn", async () => {
  const { clock, breaker } = setup();
  for (let i = 0; i < 3; i++) await assert.rejects(breaker.run(boom), /boom/);
  clock.advance(4_000);
  let calls = 0;
  const error = await breaker
    .run(async () => {
      calls++;
      return "sent";
    })
    .then(
      () => assert.fail("should reject"),
      (e: unknown) => e,
    );
  assert.equal(calls, 0);
  assert.ok(kitErrors.is(error, "BREAKER_OPEN"));
  assert.equal(error.status, 503);
  assert.deepEqual(error.fields, { breaker: "smtp", state: "open", retryAfterMs: 6_000 });
  assert.match(error.message, /smtp is open; retry in 6000 ms/);
});

test("run() passes results and errors through and drives the full cycle", async () => {
  const { clock, breaker, transitions } = setup({ failureThreshold: 2 });
  assert.equal(await breaker.run(() => 42), 42);
  await assert.rejects(breaker.run(boom), /boom/);
  await assert.rejects(
    breaker.run(() => {
      throw new Error("sync throw");
    }),
    /sync throw/,
  );
  assert.equal(breaker.state, "open");
  clock.advance(10_000);
  assert.equal(await breaker.run(async () => "probe ok"), "probe ok");
  assert.equal(breaker.state, "closed");
  assert.deepEqual(transitions(), [
    "closed->open:consecutive-failures",
    "open->half-open:open-elapsed",
    "half-open->closed:probe-succeeded",
  ]);
});

test("run() in half-open: concurrent callers beyond maxProbes are refused while the probe is in flight", async () => {
  const { clock, breaker } = setup();
  fail(breaker, 3);
  clock.advance(10_000);
  let release!: (v: string) => void;
  const probe = breaker.run(() => new Promise<string>((resolve) => (release = resolve)));
  await assert.rejects(
    breaker.run(async () => "second"),
    (e) => kitErrors.is(e, "BREAKER_OPEN"),
  );
  release("done");
  assert.equal(await probe, "done");
  assert.equal(breaker.state, "closed");
});

test("a slow success admitted before the breaker opened does not close it later", async () => {
  const { clock, breaker } = setup({ maxProbes: 1 });
  let release!: (v: string) => void;
  const slow = breaker.run(() => new Promise<string>((resolve) => (release = resolve)));
  fail(breaker, 3);
  clock.advance(10_000);
  assert.equal(breaker.state, "half-open");
  release("late");
  assert.equal(await slow, "late");
  assert.equal(breaker.state, "half-open", "the stale success is not a probe result");
  assert.equal(breaker.canRequest(), true, "the probe slot is still free");
});

test("isFailure lets the caller's own mistakes pass without counting against the dependency", async () => {
  const { breaker } = setup({
    failureThreshold: 1,
    isFailure: (e) => !(e instanceof Error && e.message.startsWith("4")),
  });
  for (let i = 0; i < 5; i++)
    await assert.rejects(
      breaker.run(() => Promise.reject(new Error("404"))),
      /404/,
    );
  assert.equal(breaker.state, "closed");
  await assert.rejects(
    breaker.run(() => Promise.reject(new Error("503"))),
    /503/,
  );
  assert.equal(breaker.state, "open");
});

test("failure rate opens the breaker over the rolling window once minCalls is reached", () => {
  const { breaker, transitions } = setup({
    failureThreshold: 100,
    failureRate: { windowCalls: 10, minCalls: 6, threshold: 0.5 },
  });
  // Alternating failures never reach 100 consecutive, but are a 50% failure rate.
  for (let i = 0; i < 5; i++) {
    assert.ok(breaker.canRequest());
    if (i % 2 === 0) breaker.onFailure();
    else breaker.onSuccess();
  }
  assert.equal(breaker.state, "closed", "5 calls < minCalls 6, even at 60%");
  assert.ok(breaker.canRequest());
  // 3 failures / 6 calls = 50%: the rate is judged after every outcome once the window
  // holds minCalls calls, so the success that completes the volume opens it (as Resilience4j does).
  breaker.onSuccess();
  assert.equal(breaker.state, "open");
  assert.deepEqual(transitions(), ["closed->open:failure-rate"]);
});

test("the failure-rate window rolls: old failures fall out", () => {
  const { breaker } = setup({
    failureThreshold: 100,
    failureRate: { windowCalls: 4, minCalls: 4, threshold: 0.75 },
  });
  const outcomes = [true, true, false, false, false, false, true, true];
  for (const failed of outcomes) {
    assert.ok(breaker.canRequest());
    if (failed) breaker.onFailure();
    else breaker.onSuccess();
  }
  // Window holds the last 4: [false, false, true, true] = 50% < 75%.
  assert.equal(breaker.state, "closed");
  assert.deepEqual([breaker.snapshot().windowCalls, breaker.snapshot().windowFailures], [4, 2]);
  breaker.onFailure(); // [false, true, true, true] = 75%
  assert.equal(breaker.state, "open");
});

test("unsubscribed listeners are not called", () => {
  const { breaker } = setup({ failureThreshold: 1 });
  let calls = 0;
  const off = breaker.onStateChange(() => calls++);
  off();
  fail(breaker, 1);
  assert.equal(calls, 0);
});

test("options are validated", () => {
  const clock = new ManualClock();
  const base = { name: "x", clock, failureThreshold: 1, openDurationMs: 1 };
  assert.throws(() => new CircuitBreaker({ ...base, name: " " }), /name/);
  assert.throws(() => new CircuitBreaker({ ...base, failureThreshold: 0 }), /failureThreshold/);
  assert.throws(() => new CircuitBreaker({ ...base, openDurationMs: 0 }), /openDurationMs/);
  assert.throws(() => new CircuitBreaker({ ...base, openDurationMs: Number.NaN }), /openDurationMs/);
  assert.throws(() => new CircuitBreaker({ ...base, maxProbes: 1.5 }), /maxProbes/);
  assert.throws(() => new CircuitBreaker({ ...base, probeTimeoutMs: -1 }), /probeTimeoutMs/);
  const rate = { windowCalls: 10, minCalls: 5, threshold: 0.5 };
  assert.throws(
    () => new CircuitBreaker({ ...base, failureRate: { ...rate, windowCalls: 0 } }),
    /windowCalls/,
  );
  assert.throws(() => new CircuitBreaker({ ...base, failureRate: { ...rate, minCalls: 11 } }), /minCalls/);
  assert.throws(() => new CircuitBreaker({ ...base, failureRate: { ...rate, threshold: 0 } }), /threshold/);
  assert.throws(() => new CircuitBreaker({ ...base, failureRate: { ...rate, threshold: 1.1 } }), /threshold/);
});
