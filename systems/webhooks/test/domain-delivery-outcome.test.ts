/** WH-01, WH-04, WH-16, WH-18, WH-23: response classes → next state, as a pure function. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import {
  type AttemptResult,
  beforeSend,
  classify,
  type DeliveryOutcome,
  decideOutcome,
  TERMINAL_STATES,
} from "../src/domain/delivery-outcome.ts";
import {
  DEFAULT_QUARANTINE_BOUNDS,
  type EndpointStreak,
  healthSignal,
} from "../src/domain/endpoint-health.ts";
import { retryAfterMs } from "../src/domain/retry-after.ts";
import { DEFAULT_DEADLINE_MS, RetryPolicy } from "../src/domain/retry-policy.ts";

const HOUR_MS = 3_600_000;
const policy = () => new RetryPolicy({ random: seededRandom("outcome") });
const NO_STREAK: EndpointStreak = { clientErrors: 0, clientErrorsSinceMs: null };

function once(
  result: AttemptResult,
  overrides: { nowMs?: number; attempt?: number; streak?: number; endpoint?: EndpointStreak } = {},
) {
  return decideOutcome({
    result,
    attempt: overrides.attempt ?? 1,
    clientErrorStreak: overrides.streak ?? 0,
    endpoint: overrides.endpoint ?? NO_STREAK,
    createdAtMs: 0,
    nowMs: overrides.nowMs ?? 1_000,
    policy: policy(),
  });
}

/** What the store does with the endpoint's streak (store/endpoint-health.ts), for one endpoint. */
function nextStreak(streak: EndpointStreak, result: AttemptResult, nowMs: number): EndpointStreak {
  if (healthSignal(classify(result)) !== "client_error") return NO_STREAK;
  return { clientErrors: streak.clientErrors + 1, clientErrorsSinceMs: streak.clientErrorsSinceMs ?? nowMs };
}

/** Plays one delivery against an endpoint that answers `answer(attempt)`, on a virtual clock, to its end. */
function playOut(answer: (attempt: number) => AttemptResult, retryPolicy = policy()) {
  const startsMs: number[] = [];
  let nowMs = 0;
  let streak = 0;
  let endpoint = NO_STREAK;
  for (let attempt = 1; attempt <= retryPolicy.maxAttempts; attempt++) {
    startsMs.push(nowMs);
    const result = answer(attempt);
    endpoint = nextStreak(endpoint, result, nowMs + 50);
    const outcome: DeliveryOutcome = decideOutcome({
      result,
      attempt,
      clientErrorStreak: streak,
      endpoint,
      createdAtMs: 0,
      nowMs: nowMs + 50,
      policy: retryPolicy,
    });
    if (outcome.state !== "retrying") return { outcome, startsMs };
    streak = outcome.clientErrorStreak;
    nowMs = outcome.nextAttemptAtMs!;
  }
  throw new Error("no terminal state within maxAttempts");
}

test("WH-01 a 2xx before the deadline is delivered; the same 2xx after it is not", () => {
  for (const status of [200, 201, 202, 204, 299]) {
    assert.equal(once({ kind: "response", status }).state, "succeeded", `status ${status}`);
  }
  const late = once({ kind: "response", status: 200 }, { nowMs: DEFAULT_DEADLINE_MS + 1 });
  assert.equal(late.state, "expired");
  assert.match(late.reason, /after the deadline/);
  // A 2xx head whose body never finished is not a valid 2xx: the sender reports a body timeout.
  assert.equal(once({ kind: "timeout", phase: "body" }).state, "retrying");
});

test("WH-16 a persistent 403 is quarantined once it persists (≥ 5 in a row over ≥ 1 h), never retried for 24 h (convoy#1833)", (t) => {
  const { outcome, startsMs } = playOut(() => ({ kind: "response", status: 403 }));
  assert.equal(outcome.state, "quarantined");
  assert.equal(outcome.subscriptionAction, "quarantine");
  assert.match(outcome.reason, /client errors in a row over \d+ s \(last: 4xx\)/);
  const lastMs = startsMs.at(-1)!;
  assert.ok(lastMs + 50 >= DEFAULT_QUARANTINE_BOUNDS.spanMsMin, `not before the span: at ${lastMs} ms`);
  assert.ok(lastMs < DEFAULT_QUARANTINE_BOUNDS.spanMsMin + 300_000, `within one cap after it: ${lastMs} ms`);
  assert.ok(startsMs.length > DEFAULT_QUARANTINE_BOUNDS.clientErrorsMin);
  t.diagnostic(`quarantined at attempt ${startsMs.length}, ${(lastMs / 60_000).toFixed(1)} min in`);
});

test("the issue's DNS failures (ENOTFOUND, EAI_AGAIN) retry for the whole window and never quarantine", () => {
  for (const code of ["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "ENODATA"]) {
    const { outcome, startsMs } = playOut(() => ({ kind: "dns_error", code }));
    assert.equal(outcome.state, "expired", code);
    assert.equal(outcome.subscriptionAction, "none", code);
    assert.ok(startsMs.length > 200, `${code}: ${startsMs.length} attempts across the window`);
    assert.ok(startsMs.at(-1)! > DEFAULT_DEADLINE_MS - 300_000, `${code}: retried up to the deadline`);
    assert.equal(once({ kind: "dns_error", code }, { streak: 4 }).clientErrorStreak, 0, code);
  }
});

test("WH-16 a client-error count alone does not quarantine: 50 in a row within minutes still retry", () => {
  const burst = once(
    { kind: "response", status: 404 },
    { nowMs: 10 * 60_000, endpoint: { clientErrors: 50, clientErrorsSinceMs: 0 } },
  );
  assert.equal(burst.state, "retrying");
  const persisted = once(
    { kind: "response", status: 404 },
    { nowMs: DEFAULT_QUARANTINE_BOUNDS.spanMsMin, endpoint: { clientErrors: 5, clientErrorsSinceMs: 0 } },
  );
  assert.equal(persisted.state, "quarantined");
  const few = once(
    { kind: "response", status: 404 },
    { nowMs: 5 * DEFAULT_QUARANTINE_BOUNDS.spanMsMin, endpoint: { clientErrors: 4, clientErrorsSinceMs: 0 } },
  );
  assert.equal(few.state, "retrying", "4 over five hours: not 5 in a row");
  const longStreak = { clientErrors: 9, clientErrorsSinceMs: 0 };
  const server = once({ kind: "response", status: 500 }, { nowMs: 2 * HOUR_MS, endpoint: longStreak });
  assert.equal(server.state, "retrying", "a 5xx never quarantines, whatever the streak before it");
});

test("WH-16 timeouts and 5xx retry by the documented policy until the deadline; they never quarantine", () => {
  const answers: AttemptResult[] = [
    { kind: "timeout", phase: "headers" },
    { kind: "response", status: 500 },
    { kind: "connection_error", phase: "connect", code: "ECONNRESET" },
  ];
  const { outcome, startsMs } = playOut((attempt) => answers[attempt % answers.length]!);
  assert.equal(outcome.state, "expired");
  assert.ok(startsMs.length > 200, `${startsMs.length} attempts across the window`);
});

test("WH-16 a client error streak resets on a server error or a 2xx: only consecutive 4xx count", () => {
  const answers = [403, 403, 403, 403, 503, 403, 403, 403, 403, 200];
  const { outcome, startsMs } = playOut((attempt) => ({ kind: "response", status: answers[attempt - 1]! }));
  assert.equal(outcome.state, "succeeded");
  assert.equal(startsMs.length, answers.length);
  for (const breaker of [503, 200]) {
    // 403s for hours, but attempt 15 (about half an hour in) answers otherwise: the hour starts again after it.
    const run = playOut((attempt) => ({ kind: "response", status: attempt === 15 ? breaker : 403 }));
    if (breaker === 200) {
      assert.equal(run.outcome.state, "succeeded", "this delivery is done; the endpoint's streak is 0");
      continue;
    }
    assert.equal(run.outcome.state, "quarantined");
    const restartMs = run.startsMs[15]!;
    assert.ok(
      run.startsMs.at(-1)! + 50 - restartMs >= DEFAULT_QUARANTINE_BOUNDS.spanMsMin,
      "a new hour after the 503",
    );
  }
});

test("WH-23 an endpoint down for two days under a 24 h policy ends expired, with no attempt after 24 h", (t) => {
  const { outcome, startsMs } = playOut(() => ({
    kind: "connection_error",
    phase: "connect",
    code: "ECONNREFUSED",
  }));
  assert.equal(outcome.state, "expired");
  assert.match(outcome.reason, /deadline/);
  assert.ok(TERMINAL_STATES.includes(outcome.state as never));
  assert.ok(startsMs.every((ms) => ms <= DEFAULT_DEADLINE_MS));
  assert.ok(
    startsMs.at(-1)! > DEFAULT_DEADLINE_MS - 300_000,
    "the last attempt is within one cap of the deadline",
  );
  t.diagnostic(
    `${startsMs.length} attempts, last at ${(startsMs.at(-1)! / HOUR_MS).toFixed(2)} h, then expired`,
  );
});

test("3xx is a failure and never followed; 410 fails and disables the subscription", () => {
  const redirect = once({ kind: "response", status: 301 });
  assert.equal(redirect.responseClass, "3xx");
  assert.equal(redirect.state, "retrying");
  assert.equal(redirect.clientErrorStreak, 1);
  const gone = once({ kind: "response", status: 410 });
  assert.deepEqual([gone.state, gone.subscriptionAction], ["failed", "disable"]);
});

test("429/502/503/504 throttle: Retry-After (seconds or HTTP date) delays the retry and holds the endpoint", () => {
  for (const status of [429, 502, 503, 504]) {
    const outcome = once({ kind: "response", status, retryAfter: "120" }, { nowMs: 10_000 });
    assert.equal(outcome.responseClass, "throttled");
    assert.equal(outcome.nextAttemptAtMs, 130_000, `status ${status}`);
    assert.equal(outcome.throttleEndpointUntilMs, 130_000);
  }
  const nowMs = Date.parse("2026-01-01T00:00:00Z");
  const dated = decideOutcome({
    result: { kind: "response", status: 503, retryAfter: "Thu, 01 Jan 2026 00:10:00 GMT" },
    attempt: 1,
    clientErrorStreak: 0,
    endpoint: NO_STREAK,
    createdAtMs: nowMs,
    nowMs,
    policy: policy(),
  });
  assert.equal(dated.nextAttemptAtMs, nowMs + 600_000);
  const noHint = once({ kind: "response", status: 429 });
  assert.equal(noHint.throttleEndpointUntilMs, undefined);
});

test("Retry-After is bounded and a malformed one is ignored", () => {
  assert.equal(retryAfterMs("86400000", 0, HOUR_MS), HOUR_MS);
  assert.equal(retryAfterMs("Thu, 01 Jan 1970 00:00:00 GMT", 5_000, HOUR_MS), 0);
  assert.equal(retryAfterMs("Sunday, 06-Nov-94 08:49:37 GMT", Date.UTC(1994, 10, 6, 8, 49, 0)), 37_000);
  assert.equal(retryAfterMs("Sun Nov  6 08:49:37 1994", Date.UTC(1994, 10, 6, 8, 49, 0)), 37_000);
  for (const bad of ["-5", "1.5", "soon", "", "99999999999", "Thu, 01 Jan 2026"]) {
    assert.equal(retryAfterMs(bad, 0), undefined, JSON.stringify(bad));
  }
});

test("a refused address is a configuration error: it counts as a client error and quarantines when it persists", () => {
  const refused = once({ kind: "address_refused", addressClass: "private" });
  assert.deepEqual([refused.state, refused.clientErrorStreak], ["retrying", 1]);
  const { outcome, startsMs } = playOut(() => ({ kind: "address_refused", addressClass: "loopback" }));
  assert.deepEqual([outcome.state, outcome.subscriptionAction], ["quarantined", "quarantine"]);
  assert.ok(startsMs.at(-1)! + 50 >= DEFAULT_QUARANTINE_BOUNDS.spanMsMin);
});

test("response classes are stable labels for Attempt.response_class", () => {
  const cases: [AttemptResult, string][] = [
    [{ kind: "response", status: 204 }, "2xx"],
    [{ kind: "response", status: 404 }, "4xx"],
    [{ kind: "response", status: 501 }, "5xx"],
    [{ kind: "response", status: 101 }, "invalid_status"],
    [{ kind: "timeout", phase: "connect" }, "timeout_connect"],
    [{ kind: "timeout", phase: "headers" }, "timeout_headers"],
  ];
  for (const [result, label] of cases) {
    assert.equal(classify(result), label);
    assert.match(label, /^[a-z0-9_]{1,32}$/);
  }
});

test("WH-04 WH-18 before sending: an inactive subscription gets nothing, and nothing starts past the deadline", () => {
  const p = policy();
  assert.deepEqual(beforeSend({ subscriptionActive: true, createdAtMs: 0, nowMs: 5, policy: p }), {
    send: true,
  });
  assert.deepEqual(beforeSend({ subscriptionActive: false, createdAtMs: 0, nowMs: 5, policy: p }), {
    send: false,
    state: "failed",
    reason: "subscription inactive",
  });
  const late = beforeSend({
    subscriptionActive: true,
    createdAtMs: 0,
    nowMs: DEFAULT_DEADLINE_MS + 1,
    policy: p,
  });
  assert.equal(late.send ? "send" : late.state, "expired");
});
