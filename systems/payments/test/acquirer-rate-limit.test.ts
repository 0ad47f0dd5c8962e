/**
 * PY-12 measured where it matters, at the acquirer: the simulator, in its own process, stamps
 * every authorization request's arrival (recording-acquirer-child.ts), and
 * - with the client's token bucket at `ratePerS` (burst `capacity`), many payments at once never
 *   reach the acquirer faster than the bucket allows: in any window of w seconds at most
 *   capacity + ratePerS · w calls arrive (four calls of slack for delivery and scheduling, plus
 *   what the longest stall of either event loop can bunch: ratePerS · stall);
 * - a saga whose acquirer answers 5xx waits with backoff on the RUNNING orchestrator: the gap
 *   between its authorize attempts is at least the jittered exponential delay's floor (half the
 *   nominal delay, equal jitter), not the orchestrator's poll interval.
 */
import assert from "node:assert/strict";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { type TestContext, test } from "node:test";
import { spawnChild } from "@casebook/lab/spawn-child";
import { engineFree } from "@casebook/lab/test-engines";
import { paymentBody, waitFor } from "./payment-fixture.ts";
import { startFullPayments } from "./payments-full-fixture.ts";

interface Arrival {
  atMs: number;
  method: string;
  url: string;
}

/** The recording simulator as its own process (recording-acquirer-child.ts). */
async function recordingSim(t: TestContext) {
  const child = await spawnChild(new URL("./recording-acquirer-child.ts", import.meta.url), {
    ready: (line) => line.startsWith('{"url"'),
    test: t,
  });
  t.after(() => child.stop({ line: "stop" }));
  const url = (JSON.parse(child.readyLine) as { url: string }).url;
  const arrivals = async (): Promise<{ arrivals: Arrival[]; longestStallMs: number }> => {
    child.send("arrivals");
    return JSON.parse(await child.nextLine()) as { arrivals: Arrival[]; longestStallMs: number };
  };
  const behave = async (knobs: Record<string, unknown>) => {
    const res = await fetch(`${url}/admin/behaviour`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(knobs),
    });
    assert.equal(res.status, 200, await res.text());
  };
  return { url, arrivals, behave };
}

/**
 * Calls of slack (1 s at 4/s) for what happens between the bucket and the stamp. Beyond it, a stall
 * moves calls together: calls admitted before a stall of the service's event loop (PGlite runs on
 * it) are written after it, and a stall of the simulator's process stamps the calls queued meanwhile
 * together — so the bound also allows ratePerS × the longest stall each side measured (at load ~20
 * on 2 cores, stalls of several hundred ms happen). The bypassed bucket sends all 16 in well under a
 * second, far past the bound of a run without long stalls.
 */
const SLACK_CALLS = 4;

/** The most calls that arrived in any window of `windowMs` (windows start at an arrival). */
function busiestWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j]! - times[i]! < windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

test("PY-12 calls to the acquirer are rate-limited: arrivals at the simulator never outrun the token bucket", async (t) => {
  if (engineFree(t)) return;
  const rec = await recordingSim(t);
  const rate = { capacity: 2, ratePerS: 4 };
  const f = await startFullPayments(t, {
    client: { baseUrl: rec.url, rateLimit: rate, breaker: { failureThreshold: 1_000 } },
    routes: { inlineDriveMs: 0 },
  });
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  t.after(() => loopDelay.disable());
  f.orchestrator.start();
  const payments = 16;
  const replies = await Promise.all(
    Array.from({ length: payments }, (_, i) => f.pay(paymentBody({ capture: false }), `rl-${i}`)),
  );
  for (const reply of replies) assert.ok(reply.status === 201 || reply.status === 202, reply.text);
  await waitFor(async () => {
    const { rows } = await f.db.query<{ n: number }>(
      "SELECT count(*)::int4 AS n FROM payments WHERE merchant_id = $1 AND status = 'authorized'",
      [f.merchant],
    );
    return rows[0]!.n === payments ? true : undefined;
  }, 60_000);
  const seen = await rec.arrivals();
  const times = seen.arrivals.map((a) => a.atMs).sort((a, b) => a - b);
  assert.ok(times.length >= payments, `${times.length} calls for ${payments} authorizations`);
  const spanS = (times.at(-1)! - times[0]!) / 1000;
  const oneSecond = busiestWindow(times, 1_000);
  const ownStallMs = loopDelay.max / 1e6;
  const bunched = Math.ceil((rate.ratePerS * (ownStallMs + seen.longestStallMs)) / 1000);
  t.diagnostic(
    `${times.length} calls over ${spanS.toFixed(2)} s; busiest second: ${oneSecond}; ` +
      `longest stalls: this process ${ownStallMs.toFixed(0)} ms, the simulator ${seen.longestStallMs.toFixed(0)} ms`,
  );
  assert.ok(
    oneSecond <= rate.capacity + rate.ratePerS + SLACK_CALLS + bunched,
    `${oneSecond} calls in one second: more than the bucket's ${rate.capacity} + ${rate.ratePerS}/s (+${SLACK_CALLS} slack, +${bunched} the stalls could bunch)`,
  );
  // Over the whole run: past the first burst, no faster than the configured rate.
  assert.ok(
    spanS >= (times.length - rate.capacity - SLACK_CALLS - bunched) / rate.ratePerS,
    `${times.length} calls in ${spanS} s: faster than ${rate.ratePerS}/s`,
  );
});

test("PY-12 sagas in flight wait with backoff: the running orchestrator spaces authorize retries by the growing delay", async (t) => {
  if (engineFree(t)) return;
  const rec = await recordingSim(t);
  const backoff = { baseMs: 100, capMs: 1_600, budgetMs: 60_000, maxAttempts: 500 };
  const f = await startFullPayments(t, {
    // One try per call (no client-side retries) and a breaker that never opens: each saga attempt is one arrival.
    client: { baseUrl: rec.url, maxTries: 1, breaker: { failureThreshold: 1_000 } },
    orchestrator: { backoff },
    routes: { inlineDriveMs: 0 },
  });
  await rec.behave({ errorRate: 1 });
  f.orchestrator.start();
  const paid = await f.pay(paymentBody(), "bo-1");
  assert.equal(paid.status, 202, paid.text);
  const attempts = 6;
  const authorizations = async () =>
    (await rec.arrivals()).arrivals.filter((a) => a.method === "POST" && a.url === "/v1/authorizations");
  await waitFor(async () => ((await authorizations()).length >= attempts ? true : undefined), 60_000, 100);
  await rec.behave({ errorRate: 0 });
  await waitFor(async () => {
    const got = await f.call("GET", `/v1/payments/${paid.body.id}`);
    return got.body.status === "captured" ? true : undefined;
  }, 30_000);
  const times = (await authorizations()).map((a) => a.atMs);
  const gaps = times.slice(1, attempts).map((at, i) => at - times[i]!);
  t.diagnostic(`gaps between authorize attempts (ms): ${gaps.map((g) => g.toFixed(0)).join(", ")}`);
  gaps.forEach((gapMs, i) => {
    const nominalMs = Math.min(backoff.capMs, backoff.baseMs * 2 ** i);
    assert.ok(
      gapMs >= nominalMs / 2 - 5,
      `retry ${i + 1} came ${gapMs.toFixed(0)} ms after the last, under ${nominalMs / 2} ms`,
    );
  });
  const { rows } = await f.db.query<{ attempts: number }>(
    "SELECT attempts FROM payments WHERE merchant_id = $1",
    [f.merchant],
  );
  assert.equal(rows[0]!.attempts, 0, "attempts reset once the acquirer approved");
});
