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
import { freshWiringKeys, keptWiringKeys } from "../src/wiring-keys.ts";
import { envEchoMain, makeFixtureRoot, removeFixtureRoot, upOnFreePorts } from "./fixtures.ts";

const scrapes = { targetsEnv: "W_TARGETS", apiKeyEnv: "W_KEY", apiKeyKind: "wk" };

const echoMain = envEchoMain({
  targets: "W_TARGETS",
  key: "W_KEY",
  metricsUrl: "CASEBOOK_CONSOLE_METRICS_URL",
  metricsKey: "CASEBOOK_CONSOLE_METRICS_API_KEY",
});

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

test("wireScrapes: every service of the launch a target, one key for the scraper and the console, kept across launches; the caller's values win", (t) => {
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
  wireScrapes(plans, { env, keys: freshWiringKeys(randomBytes) });
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

  const keysFile = join(root, ".casebook-data", "wiring-keys.json");
  const launches = [plan(), plan()];
  for (const launch of launches) wireScrapes(launch, { env, keys: keptWiringKeys(keysFile, randomBytes) });
  const [first, second] = launches.map((launch) => launch.find((p) => p.name === "watcher")!.env.W_KEY);
  assert.equal(second, first, "kept: the same key at the next launch, so none piles up in the scrape tenant");

  const mine = { ...env, W_TARGETS: "only=http://127.0.0.1:9/metrics", W_KEY: "wk_given" };
  const kept = plan();
  wireScrapes(kept, { env: mine, keys: freshWiringKeys(randomBytes) });
  assert.equal(kept.find((p) => p.name === "watcher")!.env.W_TARGETS, mine.W_TARGETS);
  assert.equal(kept.find((p) => p.name === "console")!.env.CASEBOOK_CONSOLE_METRICS_API_KEY, "wk_given");
});

test("casebook up starts the scraper with every service as a target and gives the console its URL and key", async (t) => {
  const root = fixture();
  t.after(() => removeFixtureRoot(root));
  const { ports, given } = await upOnFreePorts(t, root, ["console", "alpha", "watcher"]);
  const watcher = await given("watcher");
  assert.equal(
    watcher.targets,
    [
      `console=http://127.0.0.1:${ports.console}/metrics`,
      `alpha=http://127.0.0.1:${ports.alpha}/metrics`,
      `watcher=http://127.0.0.1:${ports.watcher}/metrics`,
    ].join(","),
  );
  const webConsole = await given("console");
  assert.equal(webConsole.metricsUrl, `http://127.0.0.1:${ports.watcher}`);
  assert.equal(webConsole.metricsKey, watcher.key);
  assert.ok(apiKeyScheme("wk").parse(watcher.key));
  assert.equal((await given("alpha")).key, null);
});
