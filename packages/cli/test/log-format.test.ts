import assert from "node:assert/strict";
import { test } from "node:test";
import { compactJsonLog, formatLogLine } from "../src/log-format.ts";

const plain = { pretty: false, color: false, nameWidth: 6 };

test("raw lines pass through unchanged behind the padded name", () => {
  const line = '{"level":30,"msg":"hi"}';
  assert.equal(formatLogLine("alpha", line, plain, 0), `alpha  | ${line}`);
  assert.equal(formatLogLine("webhooks", "plain text", plain, 0), "webhooks | plain text");
});

test("pino JSON becomes time, level, message and fields on a terminal", () => {
  const time = new Date(2024, 0, 2, 3, 4, 5, 67).getTime();
  const line = JSON.stringify({
    level: 40,
    time,
    pid: 1,
    hostname: "h",
    msg: "slow request",
    reqId: "r-1",
    ms: 1250,
    route: "/v1/check limit",
    err: { type: "Error", message: "timed out", stack: "Error: timed out\n at x" },
  });
  assert.equal(
    compactJsonLog(line, false),
    '03:04:05.067 WARN  slow request reqId=r-1 ms=1250 route="/v1/check limit" err="timed out"',
  );
  assert.equal(
    formatLogLine("alpha", line, { ...plain, pretty: true }, 0).startsWith("alpha  | 03:04:05.067 WARN "),
    true,
  );
});

test("string levels, missing parts and non-JSON lines are handled", () => {
  assert.equal(compactJsonLog('{"level":"error","message":"x"}', false), "ERROR x");
  assert.equal(compactJsonLog('{"a":1}', false), "a=1");
  assert.equal(compactJsonLog("not json", false), undefined);
  assert.equal(compactJsonLog("{broken", false), undefined);
  assert.equal(compactJsonLog("[1,2]", false), undefined);
  assert.equal(formatLogLine("a", "{broken", { ...plain, pretty: true }, 0), "a      | {broken");
});

test("colours wrap the name and warning levels only when asked", () => {
  const coloured = formatLogLine(
    "a",
    '{"level":50,"msg":"bad"}',
    { pretty: true, color: true, nameWidth: 1 },
    1,
  );
  assert.equal(coloured, "\u001b[35ma\u001b[0m | \u001b[31mERROR\u001b[0m bad");
});
