import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cliErrors } from "../src/cli-errors.ts";
import { discoverSystems } from "../src/discover-systems.ts";
import {
  engineLabel,
  type LaunchOptions,
  parsePort,
  planLaunch,
  portEnvName,
  urlFor,
} from "../src/launch-plan.ts";
import { makeFixtureRoot, removeFixtureRoot } from "./fixtures.ts";

const main = "export {};\n";

function options(root: string, overrides: Partial<LaunchOptions> = {}): LaunchOptions {
  return {
    root,
    names: [],
    host: "127.0.0.1",
    portOverrides: new Map(),
    honourPortEnv: false,
    args: [],
    env: { PATH: "/usr/bin" },
    ...overrides,
  };
}

test("a plain up takes the ready systems and says why it skips the others", (t) => {
  const root = makeFixtureRoot([
    { name: "alpha", files: { "src/main.ts": main } },
    { name: "beta", manifest: { status: "in progress" } },
    { name: "gamma", manifest: { status: "planned" }, files: { "src/main.ts": main } },
  ]);
  t.after(() => removeFixtureRoot(root));
  const { plans, skipped } = planLaunch(discoverSystems(root), options(root));
  assert.deepEqual(
    plans.map((p) => p.name),
    ["alpha"],
  );
  assert.deepEqual(skipped, [
    { name: "beta", reason: "in progress, src/main.ts not written yet" },
    { name: "gamma", reason: "planned" },
  ]);
});

test("the child's environment: manifest defaults, then the caller's, then PORT, HOST, CASEBOOK_DATA", (t) => {
  const root = makeFixtureRoot([
    { name: "alpha", files: { "src/main.ts": main }, manifest: { env: { GREETING: "hi", LEVEL: "info" } } },
  ]);
  t.after(() => removeFixtureRoot(root));
  const env = {
    LEVEL: "debug",
    PORT: "9999",
    DATABASE_URL: "postgres://db/x",
    CASEBOOK_DATA: "/var/casebook",
  };
  const [plan] = planLaunch(
    discoverSystems(root),
    options(root, { env, host: "0.0.0.0", args: ["-v"] }),
  ).plans;
  assert.ok(plan);
  assert.equal(plan.entry, join(root, "systems", "alpha", "src", "main.ts"));
  assert.equal(plan.port, 8101, "a plain PORT is not honoured by up");
  assert.equal(plan.url, "http://127.0.0.1:8101", "a wildcard bind is probed through loopback");
  assert.equal(plan.dataDir, "/var/casebook/alpha");
  assert.deepEqual(plan.args, ["-v"]);
  assert.equal(plan.engine, "postgres + in-process (embedded)");
  assert.deepEqual(
    {
      GREETING: plan.env.GREETING,
      LEVEL: plan.env.LEVEL,
      PORT: plan.env.PORT,
      HOST: plan.env.HOST,
      DATABASE_URL: plan.env.DATABASE_URL,
      CASEBOOK_DATA: plan.env.CASEBOOK_DATA,
    },
    {
      GREETING: "hi",
      LEVEL: "debug",
      PORT: "8101",
      HOST: "0.0.0.0",
      DATABASE_URL: "postgres://db/x",
      CASEBOOK_DATA: "/var/casebook/alpha",
    },
  );
});

test("port precedence: --port, then PORT (run only), then CASEBOOK_PORT_<NAME>, then the manifest", (t) => {
  const root = makeFixtureRoot([{ name: "rate-limiter", files: { "src/main.ts": main } }]);
  t.after(() => removeFixtureRoot(root));
  const systems = discoverSystems(root);
  const portOf = (overrides: Partial<LaunchOptions>) =>
    planLaunch(systems, options(root, { names: ["rate-limiter"], ...overrides })).plans[0]!.port;
  const env = { PORT: "8170", CASEBOOK_PORT_RATE_LIMITER: "8160" };
  assert.equal(portOf({}), 8101);
  assert.equal(portOf({ env }), 8160);
  assert.equal(portOf({ env, honourPortEnv: true }), 8170);
  assert.equal(portOf({ env, honourPortEnv: true, portOverrides: new Map([["rate-limiter", 8180]]) }), 8180);
  assert.throws(
    () => portOf({ env: { CASEBOOK_PORT_RATE_LIMITER: "lots" } }),
    /CASEBOOK_PORT_RATE_LIMITER=lots is not a port/,
  );
});

test("two systems on one effective port are refused; an override resolves it", (t) => {
  const root = makeFixtureRoot([
    { name: "alpha", files: { "src/main.ts": main }, manifest: { port: 8110 } },
    { name: "beta", files: { "src/main.ts": main }, manifest: { port: 8120 } },
  ]);
  t.after(() => removeFixtureRoot(root));
  const systems = discoverSystems(root);
  assert.throws(
    () => planLaunch(systems, options(root, { portOverrides: new Map([["beta", 8110]]) })),
    (error) => cliErrors.is(error, "CLI_PORT_COLLISION") && /port 8110: alpha, beta/.test(error.message),
  );
  assert.equal(
    planLaunch(systems, options(root, { portOverrides: new Map([["beta", 8111]]) })).plans.length,
    2,
  );
});

test("named systems must exist and have their main written", (t) => {
  const root = makeFixtureRoot([
    { name: "alpha", files: { "src/main.ts": main } },
    { name: "beta", manifest: { status: "in progress" } },
  ]);
  t.after(() => removeFixtureRoot(root));
  const systems = discoverSystems(root);
  assert.throws(
    () => planLaunch(systems, options(root, { names: ["alhpa"] })),
    (error) => cliErrors.is(error, "CLI_SYSTEM_UNKNOWN") && error.fields.hint === "Did you mean 'alpha'?",
  );
  assert.throws(
    () => planLaunch(systems, options(root, { names: ["beta"] })),
    (error) => cliErrors.is(error, "CLI_ENTRY_MISSING"),
  );
});

test("engine labels name the engine each role really runs on, from the manifest and the environment", () => {
  const both = ["sql", "redis"] as const;
  assert.equal(engineLabel(both, {}), "pglite (embedded) + in-process (embedded)");
  assert.equal(engineLabel(both, { DATABASE_URL: "postgres://x" }), "postgres + in-process (embedded)");
  assert.equal(engineLabel(both, { REDIS_URL: "redis://x" }), "pglite (embedded) + redis");
  assert.equal(
    engineLabel(both, { DATABASE_URL: "postgres://x", REDIS_URL: "redis://x" }),
    "postgres + redis",
  );
  assert.equal(engineLabel(["sql"], {}), "pglite (embedded)", "payments and webhooks: SQL only");
  assert.equal(engineLabel(["redis"], { DATABASE_URL: "postgres://x" }), "in-process (embedded)");
  assert.equal(engineLabel(["redis"], { REDIS_CLUSTER_NODES: "redis://a:1" }), "redis");
  assert.equal(engineLabel([], {}), "own memory", "the cache is its own engine");
  assert.equal(
    engineLabel(both, { DATABASE_URL: "" }),
    "pglite (embedded) + in-process (embedded)",
    "an empty variable is unset",
  );
});

test("names, URLs and ports from user input", () => {
  assert.equal(portEnvName("rate-limiter"), "CASEBOOK_PORT_RATE_LIMITER");
  assert.equal(urlFor("::", 8101), "http://127.0.0.1:8101");
  assert.equal(urlFor("::1", 8101), "http://[::1]:8101");
  assert.equal(urlFor("localhost", 8101), "http://localhost:8101");
  assert.equal(parsePort("8150", "--port"), 8150);
  for (const bad of ["0", "65536", "81.5", "-1", "", "x"])
    assert.throws(() => parsePort(bad, "--port"), /not a port/);
});
