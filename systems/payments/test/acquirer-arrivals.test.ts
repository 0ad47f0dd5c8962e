/**
 * The simulator's own arrivals per second (`GET /admin/arrivals`): what a caller that
 * promises a rate (flash-sale's charge queue) is checked against, on the acquirer's side of
 * the wire. Each /v1 call counts in the whole second of the simulator's clock it arrived in,
 * by operation; a call a simulated outage refuses is not an arrival; reset forgets them; the
 * record keeps the newest seconds only.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ArrivalRecord } from "../src/sim/arrival-record.ts";
import { authorization, START_MS, startSim } from "./acquirer-sim-fixture.ts";

interface Arrivals {
  seconds: { second: number; at: string; total: number; operations: Record<string, number> }[];
}

test("arrivals per second: each /v1 call in the second it arrived, by operation; outage refusals and admin calls are not arrivals; reset forgets", async (t) => {
  const { call, clock } = await startSim(t);
  const first = await call("POST", "/v1/authorizations", authorization());
  await call("POST", "/v1/authorizations", authorization());
  await call("POST", `/v1/authorizations/${String(first.body.id)}/capture`, {});
  clock.advance(1_000);
  await call("GET", "/v1/authorizations/by-key/none");
  await call("PUT", "/admin/behaviour", { outage: true });
  assert.equal((await call("POST", "/v1/authorizations", authorization())).status, 503);
  await call("PUT", "/admin/behaviour", { outage: false });
  await call("GET", "/v1/stats");

  const arrivals = (await call("GET", "/admin/arrivals")).body as unknown as Arrivals;
  const s0 = Math.floor(START_MS / 1_000);
  assert.deepEqual(arrivals.seconds, [
    {
      second: s0,
      at: new Date(s0 * 1_000).toISOString(),
      total: 3,
      operations: { "POST /v1/authorizations": 2, "POST /v1/authorizations/:id/capture": 1 },
    },
    {
      second: s0 + 1,
      at: new Date((s0 + 1) * 1_000).toISOString(),
      total: 1,
      operations: { "GET /v1/authorizations/by-key/:key": 1 },
    },
  ]);
  await call("POST", "/admin/reset");
  assert.deepEqual((await call("GET", "/admin/arrivals")).body, { seconds: [] });
});

test("the arrival record keeps the newest maxSeconds seconds, oldest first", () => {
  const record = new ArrivalRecord({ maxSeconds: 2 });
  record.record("a", 1_000);
  record.record("a", 2_500);
  record.record("b", 2_999);
  record.record("a", 3_000);
  assert.deepEqual(record.seconds(), [
    { second: 2, total: 2, operations: { a: 1, b: 1 } },
    { second: 3, total: 1, operations: { a: 1 } },
  ]);
  assert.throws(() => new ArrivalRecord({ maxSeconds: 0 }), RangeError);
});
