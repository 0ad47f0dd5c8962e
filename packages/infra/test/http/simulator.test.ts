/**
 * A tiny simulator on the base (a "push service" that counts what it was sent),
 * driven over real HTTP: every fault kind, the schedule, the counters, reset, the
 * admin token and the operations gauge.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { createSimulator, faultKnobsSchemaProperties, type Simulator } from "../../src/http/simulator.ts";
import {
  defaultFaultKnobs,
  type FaultKnobs,
  mergeFaultKnobs,
  planFaults,
  type Sleep,
} from "../../src/http/simulator-faults.ts";

interface PushSim {
  sim: Simulator<FaultKnobs>;
  url: string;
  sent: string[];
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function startPushSim(
  t: TestContext,
  options: { initial?: Partial<FaultKnobs>; sleep?: Sleep; adminToken?: string } = {},
): Promise<PushSim> {
  const sent: string[] = [];
  const sim = createSimulator<FaultKnobs>({
    name: "push-sim",
    description: "A push service simulator (test)",
    metricPrefix: "push_sim",
    rng: seededRandom("simulator-test"),
    behaviour: {
      initial: mergeFaultKnobs(defaultFaultKnobs, options.initial ?? {}),
      merge: mergeFaultKnobs,
      knobs: (knobs) => knobs,
      schema: { type: "object", additionalProperties: false, properties: faultKnobsSchemaProperties },
    },
    stats: () => ({ pushes: sent.length }),
    reset: () => void sent.splice(0),
    routes: (v1, faults) => {
      v1.post<{ Body: { token: string } }>(
        "/v1/push",
        { config: { mutating: true } },
        async (request, reply) => {
          sent.push(request.body.token);
          return faults.respond(request, reply, { id: `push-${sent.length}` });
        },
      );
      v1.get("/v1/pushes", async () => ({ count: sent.length }));
    },
    statsAliases: ["/v1/stats"],
    ...(options.sleep ? { sleep: options.sleep } : {}),
    ...(options.adminToken ? { adminToken: options.adminToken } : {}),
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const { url } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(2_000),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === "" ? {} : JSON.parse(text) };
  };
  return { sim, url, sent, call };
}

const faultsOf = async (call: PushSim["call"]) =>
  (await call("GET", "/admin/stats")).body.faults as Record<string, number>;

test("errors come before processing: nothing is done, every status is drawn, counted", async (t) => {
  const { call, sent } = await startPushSim(t);
  assert.equal((await call("PUT", "/admin/behaviour", { errorRate: 1 })).body.errorRate, 1);
  const statuses = new Set<number>();
  const codes = new Set<unknown>();
  for (let i = 0; i < 12; i++) {
    const res = await call("POST", "/v1/push", { token: "a" });
    statuses.add(res.status);
    codes.add(res.body.code);
  }
  assert.deepEqual([...statuses].sort(), [500, 502, 503]);
  assert.deepEqual([...codes].sort(), [
    "SIMULATED_INTERNAL_FAILURE",
    "SIMULATED_OVERLOADED",
    "SIMULATED_UPSTREAM_FAILED",
  ]);
  assert.deepEqual(sent, []);
  assert.equal((await faultsOf(call)).errors, 12);
});

test("latency: latencyMs plus seeded jitter through the injected sleep; admin calls are never delayed", async (t) => {
  const delays: number[] = [];
  const { call } = await startPushSim(t, {
    initial: { latencyMs: 30, latencyJitterMs: 5 },
    sleep: async (ms) => void delays.push(ms),
  });
  for (let i = 0; i < 5; i++) assert.equal((await call("POST", "/v1/push", { token: "a" })).status, 200);
  await call("GET", "/admin/behaviour");
  assert.equal(delays.length, 5);
  assert.ok(
    delays.every((ms) => ms >= 30 && ms <= 35),
    delays.join(),
  );
  assert.equal((await faultsOf(call)).delayedCalls, 5);
});

test("outage: refused before validation with 503 + Retry-After, or the connection reset; admin still answers", async (t) => {
  const { call, sent } = await startPushSim(t);
  await call("PUT", "/admin/behaviour", { outage: true });
  const refused = await call("POST", "/v1/push", { junk: true });
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, "SIMULATED_OUTAGE");
  assert.equal(refused.headers.get("retry-after"), "1");
  await call("PUT", "/admin/behaviour", { outageMode: "reset" });
  await assert.rejects(call("GET", "/v1/pushes"), TypeError);
  assert.deepEqual(sent, []);
  const faults = await faultsOf(call);
  assert.equal(faults.outageRefusals, 1);
  assert.equal(faults.connectionResets, 1);
  assert.equal((await call("GET", "/healthz")).status, 200);
});

test("a lost response is processed: reset cuts the socket, hang holds it until close() cuts it", async (t) => {
  const { call, sim, sent } = await startPushSim(t, { initial: { hangMs: 600_000 } });
  await call("PUT", "/admin/behaviour", { lostResponseRate: 1, lostResponseMode: "reset" });
  await assert.rejects(call("POST", "/v1/push", { token: "r" }), TypeError);
  assert.equal((await call("GET", "/v1/pushes")).status, 200, "read-only calls never lose their response");
  await call("PUT", "/admin/behaviour", { lostResponseMode: "hang" });
  const hung = call("POST", "/v1/push", { token: "h" }).then(
    () => "answered",
    () => "cut",
  );
  for (let i = 0; i < 200 && sim.faults.counters().heldSockets === 0; i++)
    await new Promise((resolve) => setImmediate(resolve));
  assert.equal(sim.faults.counters().heldSockets, 1);
  assert.deepEqual(sent, ["r", "h"], "both were done");
  assert.equal(sim.faults.counters().responsesLost, 2);
  await sim.close();
  assert.equal(await hung, "cut");
});

test("a schedule scripts the next calls in order, then the knobs decide again", async (t) => {
  const { call, sent } = await startPushSim(t);
  const schedule = await call("PUT", "/admin/faults/schedule", {
    faults: [{ kind: "error", status: 502 }, { kind: "lost-response", mode: "reset" }, { kind: "none" }],
  });
  assert.equal((schedule.body.faults as unknown[]).length, 3);
  assert.equal((await call("POST", "/v1/push", { token: "1" })).status, 502);
  // A lost response needs a mutating call: a read goes through and leaves the entry in place.
  assert.equal((await call("GET", "/v1/pushes")).status, 200);
  await assert.rejects(call("POST", "/v1/push", { token: "2" }), TypeError);
  assert.equal((await call("POST", "/v1/push", { token: "3" })).status, 200);
  assert.deepEqual((await call("GET", "/admin/faults/schedule")).body.faults, []);
  assert.equal(
    (await call("POST", "/v1/push", { token: "4" })).status,
    200,
    "empty schedule: knobs (all off)",
  );
  assert.deepEqual(sent, ["2", "3", "4"]);
  const bad = await call("PUT", "/admin/faults/schedule", { faults: [{ kind: "chaos" }] });
  assert.equal(bad.status, 400);
});

test("reset forgets state, counters and schedule, and restores the starting knobs; stats alias and gauge agree", async (t) => {
  const { call, url } = await startPushSim(t, { initial: { latencyMs: 0, errorRate: 0 } });
  await call("POST", "/v1/push", { token: "a" });
  await call("PUT", "/admin/behaviour", { errorRate: 0.5 });
  await call("PUT", "/admin/faults/schedule", { faults: [{ kind: "error" }] });
  assert.equal((await call("GET", "/v1/stats")).body.pushes, 1);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /push_sim_operations\{kind="pushes"\} 1/);
  assert.match(metrics, /push_sim_operations\{kind="fault_errors"\} 0/);
  assert.deepEqual((await call("POST", "/admin/reset")).body, { reset: true });
  assert.equal((await call("GET", "/admin/behaviour")).body.errorRate, 0);
  assert.deepEqual((await call("GET", "/admin/faults/schedule")).body.faults, []);
  assert.equal((await call("GET", "/admin/stats")).body.pushes, 0);
  const bad = await call("PUT", "/admin/behaviour", { errorRate: 2 });
  assert.equal((bad.body.errors as { field: string }[])[0]?.field, "/body/errorRate");
});

test("with adminToken, /admin and the stats aliases need the bearer token; the simulated API does not", async (t) => {
  const { call } = await startPushSim(t, { adminToken: "s3cret" });
  assert.equal((await call("GET", "/admin/behaviour")).status, 401);
  assert.equal((await call("GET", "/v1/stats", undefined, { authorization: "Bearer wrong!" })).status, 401);
  assert.equal(
    (await call("GET", "/admin/stats", undefined, { authorization: "Bearer s3cret" })).status,
    200,
  );
  assert.equal((await call("POST", "/v1/push", { token: "a" })).status, 200);
});

test("planFaults draws only for knobs that are on, reproducibly for a seed", () => {
  assert.deepEqual(planFaults(defaultFaultKnobs, seededRandom(1), { mutating: true }), {
    delayMs: 0,
    fault: { kind: "none" },
  });
  const noisy = mergeFaultKnobs(defaultFaultKnobs, {
    errorRate: 0.3,
    lostResponseRate: 0.3,
    latencyJitterMs: 9,
  });
  const run = (seed: number) => {
    const rng = seededRandom(seed);
    return Array.from({ length: 40 }, () => planFaults(noisy, rng, { mutating: true }));
  };
  assert.deepEqual(run(5), run(5));
  assert.deepEqual(
    new Set(run(5).map((plan) => plan.fault.kind)),
    new Set(["none", "error", "lost-response"]),
  );
  assert.ok(run(5).every((plan) => plan.delayMs >= 0 && plan.delayMs <= 9));
  assert.throws(
    () => mergeFaultKnobs(defaultFaultKnobs, { hangMs: 0 }),
    /hangMs must be a number in \[1, 600000\]/,
  );
});
