/**
 * Issue 22 in `casebook up`: the system whose manifest declares `scrapes` (metrics) is started
 * with every service of the launch as its targets — the console and itself included — and a
 * fresh key of the declared kind; the console is told that system's URL and the same key. The
 * wiring as a plan (`wireScrapes`), then through the real CLI with fixture services that echo
 * what they were given.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { consolePlan } from "../src/console-plan.ts";
import { discoverSystems } from "../src/discover-systems.ts";
import { planLaunch } from "../src/launch-plan.ts";
import { parseManifest } from "../src/manifest.ts";
import { wireScrapes } from "../src/scrape-plan.ts";
import { cliEnv, freePort, makeFixtureRoot, removeFixtureRoot, startCli } from "./fixtures.ts";

const scrapes = { targetsEnv: "W_TARGETS", apiKeyEnv: "W_KEY", apiKeyKind: "wk" };

/** Serves /healthz with the variables the wiring sets, and stops on SIGTERM. */
const echoMain = `
import { createServer } from "node:http";
const given = { targets: process.env.W_TARGETS ?? null, key: process.env.W_KEY ?? null,
  metricsUrl: process.env.CASEBOOK_CONSOLE_METRICS_URL ?? null, metricsKey: process.env.CASEBOOK_CONSOLE_METRICS_API_KEY ?? null };
const server = createServer((req, res) => { res.writeHead(200, { "content-type": "application/json" }); res.end(JSON.stringify(given)); });
server.listen(Number(process.env.PORT), process.env.HOST);
process.on("SIGTERM", () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`;

function fixture() {
  const root = makeFixtureRoot([
    { name: "alpha", files: { "src/main.ts": echoMain } },
    { name: "watcher", files: { "src/main.ts": echoMain }, manifest: { scrapes } },
  ]);
  mkdirSync(join(root, "packages", "console", "src"), { recursive: true });
  writeFileSync(join(root, "packages", "console", "src", "main.ts"), echoMain);
  return root;
}

test("the manifest's scrapes block is checked field by field", () => {
  const parse = (value: unknown) =>
    parseManifest(
      { name: "@casebook/w", casebook: { title: "w", status: "working", port: 8101, scrapes: value } },
      "w/package.json",
      "w",
    );
  assert.deepEqual(parse(scrapes).manifest?.scrapes, scrapes);
  assert.deepEqual(parse({ targetsEnv: "lower", apiKeyEnv: "K", apiKeyKind: "Not a kind" }).problems, [
    'w/package.json: field "casebook.scrapes.targetsEnv" must be an UPPER_SNAKE_CASE variable name, got "lower"',
    'w/package.json: field "casebook.scrapes.apiKeyKind" must be a key kind like "mtk" (1–8 lower-case letters), got "Not a kind"',
  ]);
  assert.match(parse("yes").problems[0]!, /casebook\.scrapes" must be an object/);
});

test("wireScrapes: every service of the launch a target, one fresh key for the scraper and the console; the caller's values win", (t) => {
  const root = fixture();
  t.after(() => removeFixtureRoot(root));
  const env = { PATH: "/usr/bin" };
  const options = {
    root,
    names: [],
    host: "127.0.0.1",
    portOverrides: new Map<string, number>(),
    honourPortEnv: false,
    args: [],
    env,
  };
  const plan = () => {
    const { plans } = planLaunch(discoverSystems(root), options);
    plans.unshift(consolePlan(plans, { root, host: "127.0.0.1", portOverrides: new Map(), env })!);
    return plans;
  };
  const plans = plan();
  wireScrapes(plans, { env, randomBytes });
  const watcher = plans.find((p) => p.name === "watcher")!;
  const webConsole = plans.find((p) => p.name === "console")!;
  assert.equal(
    watcher.env.W_TARGETS,
    "console=http://127.0.0.1:8100/metrics,alpha=http://127.0.0.1:8101/metrics,watcher=http://127.0.0.1:8102/metrics",
  );
  assert.ok(apiKeyScheme("wk").parse(watcher.env.W_KEY), "a key of the declared kind");
  assert.equal(webConsole.env.CASEBOOK_CONSOLE_METRICS_URL, watcher.url);
  assert.equal(webConsole.env.CASEBOOK_CONSOLE_METRICS_API_KEY, watcher.env.W_KEY);
  assert.equal(plans.find((p) => p.name === "alpha")!.env.W_KEY, undefined, "only the scraper gets the key");

  const again = plan();
  wireScrapes(again, { env, randomBytes });
  assert.notEqual(
    again.find((p) => p.name === "watcher")!.env.W_KEY,
    watcher.env.W_KEY,
    "a fresh key per launch",
  );

  const mine = { ...env, W_TARGETS: "only=http://127.0.0.1:9/metrics", W_KEY: "wk_given" };
  const kept = plan();
  wireScrapes(kept, { env: mine, randomBytes });
  assert.equal(kept.find((p) => p.name === "watcher")!.env.W_TARGETS, mine.W_TARGETS);
  assert.equal(kept.find((p) => p.name === "console")!.env.CASEBOOK_CONSOLE_METRICS_API_KEY, "wk_given");
});

test("casebook up starts the scraper with every service as a target and gives the console its URL and key", async (t) => {
  const root = fixture();
  t.after(() => removeFixtureRoot(root));
  const [consolePort, alphaPort, watcherPort] = [await freePort(), await freePort(), await freePort()];
  const cli = startCli(
    [
      "up",
      "--port",
      `console=${consolePort}`,
      "--port",
      `alpha=${alphaPort}`,
      "--port",
      `watcher=${watcherPort}`,
      "--logs",
      "raw",
    ],
    cliEnv(root),
  );
  t.after(async () => {
    cli.child.kill("SIGTERM");
    await cli.exited;
  });
  await cli.waitFor(/system\(s\) up/);
  const given = async (port: number) =>
    (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as Record<string, string | null>;
  const watcher = await given(watcherPort);
  assert.equal(
    watcher.targets,
    [
      `console=http://127.0.0.1:${consolePort}/metrics`,
      `alpha=http://127.0.0.1:${alphaPort}/metrics`,
      `watcher=http://127.0.0.1:${watcherPort}/metrics`,
    ].join(","),
  );
  const webConsole = await given(consolePort);
  assert.equal(webConsole.metricsUrl, `http://127.0.0.1:${watcherPort}`);
  assert.equal(webConsole.metricsKey, watcher.key);
  assert.ok(apiKeyScheme("wk").parse(watcher.key));
  assert.equal((await given(alphaPort)).key, null);
});
