/**
 * The console's scenario routes against a small system on infra's scenario-runs: declared ids
 * only, the system's answers passed through, a silent system a 502, the admin token beyond loopback.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import { createService } from "@casebook/infra/http/service";
import { consoleErrors } from "../src/console-errors.ts";
import { registerScenarioProxy } from "../src/scenario-proxy.ts";
import type { Catalog, CatalogSystem } from "../src/system-catalog.ts";

const scenario = { id: "quick", title: "Quick", line: "one line" };

function catalogFor(url: string): Catalog {
  const system = {
    name: "toy",
    url,
    declaration: { summary: "s", ports: [], plots: [], scenarios: [scenario] },
  } as unknown as CatalogSystem;
  return { systems: [system], problems: [] };
}

test("the console forwards a declared scenario's start and run, refuses others, needs the admin token when set", async (t) => {
  const system = createService({
    name: "toy",
    version: "0",
    log: { level: "silent" },
    errors: [scenarioErrors],
  });
  registerScenarioRoutes(
    system.app,
    new ScenarioRuns([{ ...scenario, xLabel: "x", yLabel: "y", run: async () => "done quickly" }]),
  );
  const { url } = await system.listen({ port: 0, host: "127.0.0.1" });
  const open = createService({
    name: "console",
    version: "0",
    log: { level: "silent" },
    errors: [consoleErrors],
  });
  registerScenarioProxy(open.app, { catalog: catalogFor(url) });
  const guarded = createService({
    name: "console",
    version: "0",
    log: { level: "silent" },
    errors: [consoleErrors],
  });
  registerScenarioProxy(guarded.app, { catalog: catalogFor(url), adminToken: "a-long-admin-token-123" });
  const silent = createService({
    name: "console",
    version: "0",
    log: { level: "silent" },
    errors: [consoleErrors],
  });
  registerScenarioProxy(silent.app, { catalog: catalogFor("http://127.0.0.1:1"), timeoutMs: 1_000 });
  t.after(async () => {
    await Promise.all([open.close(), guarded.close(), silent.close(), system.close()]);
  });

  const start = await open.app.inject({ method: "POST", url: "/api/systems/toy/scenarios/quick/runs" });
  assert.equal(start.statusCode, 202);
  const { runId } = start.json<{ runId: string }>();
  let state = "running";
  for (let i = 0; i < 100 && state === "running"; i++) {
    const run = await open.app.inject({
      method: "GET",
      url: `/api/systems/toy/scenarios/quick/runs/${runId}`,
    });
    state = run.json<{ state: string; result: string }>().state;
    if (state === "done") assert.equal(run.json<{ result: string }>().result, "done quickly");
  }
  assert.equal(state, "done");

  const undeclared = await open.app.inject({ method: "POST", url: "/api/systems/toy/scenarios/other/runs" });
  assert.equal(undeclared.json<{ code: string }>().code, "CONSOLE_SCENARIO_NOT_FOUND");
  const unknownSystem = await open.app.inject({
    method: "POST",
    url: "/api/systems/nope/scenarios/quick/runs",
  });
  assert.equal(unknownSystem.statusCode, 404);

  const noToken = await guarded.app.inject({ method: "POST", url: "/api/systems/toy/scenarios/quick/runs" });
  assert.equal(noToken.statusCode, 401);
  assert.equal(noToken.json<{ code: string }>().code, "CONSOLE_ADMIN_TOKEN_REQUIRED");
  const withToken = await guarded.app.inject({
    method: "POST",
    url: "/api/systems/toy/scenarios/quick/runs",
    headers: { authorization: "Bearer a-long-admin-token-123" },
  });
  assert.equal(withToken.statusCode, 202);

  const down = await silent.app.inject({ method: "POST", url: "/api/systems/toy/scenarios/quick/runs" });
  assert.equal(down.statusCode, 502);
  assert.equal(down.json<{ code: string }>().code, "CONSOLE_SYSTEM_UNREACHABLE");
});
