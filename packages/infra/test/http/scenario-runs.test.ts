import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  registerScenarioRoutes,
  type Scenario,
  type ScenarioRun,
  ScenarioRuns,
  scenarioErrors,
} from "../../src/http/scenario-runs.ts";
import { createService } from "../../src/http/service.ts";

const info = { title: "t", line: "one line", xLabel: "x", yLabel: "y" };

function gated(id: string): { scenario: Scenario; open(): void } {
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    open: () => open(),
    scenario: {
      id,
      ...info,
      run: async (ctx) => {
        for (let i = 0; i < 5; i++) ctx.point("a", i, i * i);
        ctx.progress(0.5);
        await gate;
        return "five points";
      },
    },
  };
}

async function until<R extends { state: string }>(read: () => Promise<R>): Promise<R> {
  for (let i = 0; i < 200; i++) {
    const run = await read();
    if (run.state !== "running") return run;
    await sleep(10);
  }
  throw new Error("still running");
}

test("a run over HTTP: 202 with its id, progress and points while it runs, a second start refused (409), then its result", async (t) => {
  const service = createService({
    name: "scenario-test",
    version: "0",
    log: { level: "silent" },
    errors: [scenarioErrors],
  });
  t.after(() => service.close());
  const one = gated("first");
  const runs = new ScenarioRuns([one.scenario, { id: "second", ...info, run: async () => "x" }]);
  registerScenarioRoutes(service.app, runs);
  const listed = await service.app.inject({ method: "GET", url: "/v1/scenarios" });
  assert.deepEqual(
    listed.json().scenarios.map((s: { id: string }) => s.id),
    ["first", "second"],
  );
  const started = await service.app.inject({ method: "POST", url: "/v1/scenarios/first/runs" });
  assert.equal(started.statusCode, 202);
  const { runId } = started.json();
  const busy = await service.app.inject({ method: "POST", url: "/v1/scenarios/second/runs" });
  assert.equal(busy.statusCode, 409);
  assert.equal(busy.json().code, "SCENARIO_BUSY");
  const mid = (await service.app.inject({ method: "GET", url: `/v1/scenarios/first/runs/${runId}` })).json();
  assert.equal(mid.state, "running");
  assert.equal(mid.progress, 0.5);
  assert.equal(mid.points.length, 5);
  one.open();
  const read = async () =>
    (
      await service.app.inject({ method: "GET", url: `/v1/scenarios/first/runs/${runId}` })
    ).json<ScenarioRun>();
  const done = await until(read);
  assert.equal(done.state, "done");
  assert.equal(done.result, "five points");
  assert.equal(done.progress, 1);
  const unknown = await service.app.inject({ method: "POST", url: "/v1/scenarios/nope/runs" });
  assert.equal(unknown.statusCode, 404);
  const far = await service.app.inject({
    method: "POST",
    url: "/v1/scenarios/second/runs",
    remoteAddress: "10.1.2.3",
  });
  assert.equal(far.statusCode, 403);
  assert.equal(far.json().code, "SCENARIO_LOCAL_ONLY");
});

test("a run is bounded: stopped at its time bound (its signal aborted), its points capped", async () => {
  let aborted = false;
  const runs = new ScenarioRuns(
    [
      {
        id: "endless",
        ...info,
        run: async (ctx) => {
          for (let i = 0; i < 50; i++) ctx.point("a", i, i);
          ctx.signal.addEventListener("abort", () => {
            aborted = true;
          });
          await new Promise(() => {});
          return "never";
        },
      },
    ],
    { timeoutMs: 50, maxPoints: 10 },
  );
  const run = runs.start("endless");
  const ended = await until(async () => runs.get("endless", run.runId));
  assert.equal(ended.state, "timed out");
  assert.equal(run.points.length, 10);
  assert.equal(run.droppedPoints, 40);
  assert.ok(aborted);
  assert.match(String(run.error), /50 ms/);
  const again = runs.start("endless");
  await runs.drain();
  assert.equal(runs.get("endless", again.runId).state, "stopped");
});

test("a scenario's own timeoutMs outranks the registry's (one that starts a deployment needs more)", async () => {
  const slow = (id: string, timeoutMs?: number) => ({
    id,
    ...info,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    run: (ctx: { signal: AbortSignal }) =>
      new Promise<string>((resolve, reject) => {
        const done = setTimeout(() => resolve("took 150 ms"), 150);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(done);
          reject(ctx.signal.reason);
        });
      }),
  });
  const runs = new ScenarioRuns([slow("registry-bound"), slow("own-bound", 2_000)], { timeoutMs: 50 });
  const short = runs.start("registry-bound");
  const ended = await until(async () => runs.get("registry-bound", short.runId));
  assert.equal(ended.state, "timed out");
  assert.match(String(ended.error), /50 ms/);
  const long = runs.start("own-bound");
  const finished = await until(async () => runs.get("own-bound", long.runId));
  assert.equal(finished.state, "done", String(finished.error));
  assert.equal(finished.result, "took 150 ms");
});
