import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type LimitStatus,
  rateLimitHeaders,
  retryAfterSeconds,
  sfString,
} from "../src/domain/rate-limit-headers.ts";

// draft-ietf-httpapi-ratelimit-headers-11: a List of String items, each with Integer parameters.
const SF_ITEM = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"(?:;[a-z][a-z0-9_.*-]*=\d{1,15})+$/;

function assertSfList(value: string | undefined): string[] {
  assert.ok(value !== undefined);
  const items = value.split(", ");
  for (const item of items) assert.match(item, SF_ITEM);
  return items;
}

const perUser: LimitStatus = {
  policy: "per-user",
  quota: 5,
  windowS: 10,
  remaining: 0,
  resetMs: 9_000,
  refused: true,
  retryAfterMs: 1_461,
};
const perIp: LimitStatus = { policy: "per-ip", quota: 100, windowS: 2, remaining: 57, resetMs: 860 };
const daily: LimitStatus = {
  policy: "daily",
  quota: 1_000,
  windowS: 86_400,
  remaining: 12,
  resetMs: 3_600_000,
};

test("RL-15 a 429 carries Retry-After in whole seconds rounded up (1461 ms → 2) and the limit / remaining / reset headers", () => {
  const headers = rateLimitHeaders({ outcome: "limited", limits: [perIp, perUser] });
  assert.deepEqual(headers, {
    "Retry-After": "2",
    "RateLimit-Policy": '"per-ip";q=100;w=2, "per-user";q=5;w=10',
    RateLimit: '"per-ip";r=57;t=1, "per-user";r=0;t=2',
    "X-RateLimit-Limit": "5",
    "X-RateLimit-Remaining": "0",
    "X-RateLimit-Reset": "2",
  });
  assertSfList(headers["RateLimit-Policy"]);
  assertSfList(headers.RateLimit);
});

test("RL-15 Retry-After is never below the refusing policy's effective window t (draft §6)", () => {
  const headers = rateLimitHeaders({ outcome: "limited", limits: [perUser] });
  const t = Number(/;t=(\d+)/.exec(headers.RateLimit ?? "")?.[1]);
  assert.ok(Number(headers["Retry-After"]) >= t);
});

test("RL-12 RL-15 a fail-closed 503 carries Retry-After, and may advertise the static policies", () => {
  assert.deepEqual(rateLimitHeaders({ outcome: "unavailable", retryAfterMs: 4_001 }), { "Retry-After": "5" });
  const headers = rateLimitHeaders({
    outcome: "unavailable",
    retryAfterMs: 0,
    policies: [{ policy: "billing", quota: 10, windowS: 60 }],
  });
  assert.deepEqual(headers, { "Retry-After": "1", "RateLimit-Policy": '"billing";q=10;w=60' });
});

test("an allowed response advertises every policy, and the trio for the one with the least remaining", () => {
  const headers = rateLimitHeaders({ outcome: "allowed", limits: [perIp, daily] });
  assert.equal(headers["Retry-After"], undefined);
  assert.equal(headers.RateLimit, '"per-ip";r=57;t=1, "daily";r=12;t=3600');
  assert.deepEqual(
    [headers["X-RateLimit-Limit"], headers["X-RateLimit-Remaining"], headers["X-RateLimit-Reset"]],
    ["1000", "12", "3600"],
  );
});

test("the refusing limit with the longest wait drives the trio and Retry-After", () => {
  const slow: LimitStatus = { ...perUser, policy: "slow", retryAfterMs: 30_000 };
  const headers = rateLimitHeaders({ outcome: "limited", limits: [perUser, slow, perIp] });
  assert.equal(headers["Retry-After"], "30");
  assert.equal(headers["X-RateLimit-Reset"], "30");
  assert.equal(
    rateLimitHeaders({ outcome: "limited", limits: [perUser], retryAfterMs: 7_200 })["Retry-After"],
    "8",
  );
});

test("shadow limits are never advertised", () => {
  const shadow: LimitStatus = { ...perUser, policy: "probe", shadow: true };
  const headers = rateLimitHeaders({ outcome: "allowed", limits: [perIp, shadow] });
  assert.ok(!headers["RateLimit-Policy"]?.includes("probe"));
  assert.equal(headers["X-RateLimit-Limit"], "100");
  assert.deepEqual(rateLimitHeaders({ outcome: "allowed", limits: [shadow] }), {});
});

test("draft and legacy headers can each be turned off; Reset can be epoch seconds from an injected now", () => {
  const draftOnly = rateLimitHeaders({ outcome: "allowed", limits: [perIp] }, { legacy: false });
  assert.deepEqual(Object.keys(draftOnly).sort(), ["RateLimit", "RateLimit-Policy"]);
  const legacyOnly = rateLimitHeaders({ outcome: "allowed", limits: [perIp] }, { draft: false });
  assert.deepEqual(Object.keys(legacyOnly).sort(), [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
  ]);
  const epoch = rateLimitHeaders(
    { outcome: "allowed", limits: [perIp] },
    { resetStyle: "epoch-seconds", nowMs: 1_700_000_000_500 },
  );
  assert.equal(epoch["X-RateLimit-Reset"], "1700000002");
  assert.throws(
    () => rateLimitHeaders({ outcome: "allowed", limits: [perIp] }, { resetStyle: "epoch-seconds" }),
    /nowMs/,
  );
});

test("values are Structured-Field safe: strings escaped, integers non-negative, windows at least 1 s", () => {
  assert.equal(sfString('a"b\\c'), '"a\\"b\\\\c"');
  assert.throws(() => sfString("caf\u00e9"), RangeError);
  const odd: LimitStatus = { policy: 'we"ird', quota: 3, windowS: 0, remaining: -2.5, resetMs: -10 };
  const headers = rateLimitHeaders({ outcome: "allowed", limits: [odd] });
  assert.equal(headers["RateLimit-Policy"], '"we\\"ird";q=3;w=1');
  assert.equal(headers.RateLimit, '"we\\"ird";r=0;t=0');
  assertSfList(headers.RateLimit);
});

test("retryAfterSeconds rounds up with a minimum of 1", () => {
  assert.deepEqual([0, 1, 999, 1_000, 1_001, 1_461].map(retryAfterSeconds), [1, 1, 1, 1, 2, 2]);
  assert.throws(() => retryAfterSeconds(Number.POSITIVE_INFINITY), RangeError);
});
