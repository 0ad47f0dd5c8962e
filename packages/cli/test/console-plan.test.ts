/**
 * `casebook up`'s first child, the web console: planned only where packages/console exists,
 * on 8100 unless moved, told where every system of the launch listens, and on loopback
 * unless an admin token is set.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { consoleDefaultPort, consolePlan } from "../src/console-plan.ts";
import { discoverSystems } from "../src/discover-systems.ts";
import { planLaunch } from "../src/launch-plan.ts";
import { makeFixtureRoot, removeFixtureRoot } from "./fixtures.ts";

test("the console is planned with the systems' URLs, on 8100 unless moved, on loopback without a token", (t) => {
  const root = makeFixtureRoot([{ name: "alpha", files: { "src/main.ts": "export {};\n" } }]);
  t.after(() => removeFixtureRoot(root));
  const env = { PATH: "/usr/bin" };
  const { plans } = planLaunch(discoverSystems(root), {
    root,
    names: [],
    host: "0.0.0.0",
    portOverrides: new Map(),
    honourPortEnv: false,
    args: [],
    env,
  });
  const options = { root, host: "0.0.0.0", portOverrides: new Map<string, number>(), env };
  assert.equal(consolePlan(plans, options), undefined, "no packages/console: no console");

  mkdirSync(join(root, "packages", "console", "src"), { recursive: true });
  writeFileSync(join(root, "packages", "console", "src", "main.ts"), "export {};\n");
  const plan = consolePlan(plans, options)!;
  assert.equal(plan.port, consoleDefaultPort);
  assert.equal(plan.host, "127.0.0.1", "loopback: no admin token");
  assert.deepEqual(JSON.parse(plan.env.CASEBOOK_CONSOLE_SYSTEMS!), [
    { name: "alpha", url: "http://127.0.0.1:8101" },
  ]);

  const moved = consolePlan(plans, { ...options, portOverrides: new Map([["console", 8150]]) })!;
  assert.equal(moved.port, 8150);
  const fromEnv = consolePlan(plans, { ...options, env: { ...env, CASEBOOK_PORT_CONSOLE: "8151" } })!;
  assert.equal(fromEnv.port, 8151);
  const withToken = consolePlan(plans, {
    ...options,
    env: { ...env, CASEBOOK_CONSOLE_ADMIN_TOKEN: "0123456789abcdef" },
  })!;
  assert.equal(withToken.host, "0.0.0.0");
});
