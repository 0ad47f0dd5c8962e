import assert from "node:assert/strict";
import { test } from "node:test";
import { passUnknownAfterName } from "../src/command-args.ts";
import { benchMain, cliEnv, healthyMain, makeFixtureRoot, removeFixtureRoot, runCli } from "./fixtures.ts";

test("--help on the top level and on every command prints usage with examples", async (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  const env = cliEnv(root);
  for (const args of [
    [],
    ["--help"],
    ["-h"],
    ["help"],
    ["help", "up"],
    ["list", "--help"],
    ["up", "-h"],
    ["run", "--help"],
    ["bench", "--help"],
    ["help", "--help"],
  ]) {
    const result = await runCli(args, env);
    assert.equal(result.code, 0, args.join(" "));
    assert.match(result.stdout, /Usage\n {2}casebook/, args.join(" "));
    assert.match(result.stdout, /Examples\n/, args.join(" "));
    assert.equal(result.stderr, "", args.join(" "));
  }
  const up = await runCli(["up", "--help"], env);
  assert.match(up.stdout, /CASEBOOK_PORT_<NAME>/);
  assert.match(up.stdout, /PORT and HOST/, "the env contract of main.ts is documented");
});

test("--version prints the CLI's version", async () => {
  const result = await runCli(["--version"], cliEnv("/nonexistent-is-not-read"));
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^casebook \d+\.\d+\.\d+\n$/);
});

test("unknown commands and options exit 2 with a hint", async (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  const env = cliEnv(root);
  const typo = await runCli(["lsit"], env);
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /unknown command 'lsit'\.\n {2}hint: Did you mean 'list'\?/);
  const nonsense = await runCli(["frobnicate"], env);
  assert.equal(nonsense.code, 2);
  assert.match(nonsense.stderr, /Commands: list, up, run, bench, new, help/);
  const flag = await runCli(["up", "--bogus"], env);
  assert.equal(flag.code, 2);
  assert.match(
    flag.stderr,
    /unknown option '--bogus' for `casebook up`\.\n {2}hint: Run `casebook up --help`/,
  );
  const typoFlag = await runCli(["list", "--jsno"], env);
  assert.equal(typoFlag.code, 2);
  assert.match(typoFlag.stderr, /Did you mean '--json'\?/);
  const topFlag = await runCli(["--bogus"], env);
  assert.equal(topFlag.code, 2);
  const badValue = await runCli(["up", "--health-timeout-ms", "soon"], env);
  assert.equal(badValue.code, 2);
  assert.match(badValue.stderr, /--health-timeout-ms soon is not valid/);
  const badLogs = await runCli(["up", "--logs", "fancy"], env);
  assert.equal(badLogs.code, 2);
  const badPort = await runCli(["up", "--port", "8150"], env);
  assert.equal(badPort.code, 2);
  assert.match(badPort.stderr, /Write --port <name>=<port>/);
  const helpTopic = await runCli(["help", "uup"], env);
  assert.equal(helpTopic.code, 2);
  assert.match(helpTopic.stderr, /Did you mean 'up'\?/);
});

test("list shows every system with its status, port and what exists of it", async (t) => {
  const root = makeFixtureRoot([
    {
      name: "alpha",
      files: { "src/main.ts": healthyMain, "bench/main.ts": benchMain },
      manifest: { port: 8140, tools: { seed: "src/seed.ts", reconcile: "src/reconcile.ts" } },
    },
    { name: "beta", manifest: { status: "in progress", title: "news feed" } },
    { name: "gamma", manifest: { status: "planned" } },
  ]);
  t.after(() => removeFixtureRoot(root));
  const result = await runCli(["list"], cliEnv(root));
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trimEnd().split("\n");
  assert.match(lines[0]!, /^system\s+status\s+port\s+design\s+main\s+bench\s+tools$/);
  assert.match(
    lines[2]!,
    /^alpha\s+working\s+8140\s+fixture alpha\s+src\/main\.ts\s+bench\/main\.ts\s+reconcile, seed$/,
  );
  assert.match(lines[3]!, /^beta\s+in progress\s+8102\s+news feed\s+src\/main\.ts \(not yet\)\s+—\s+—$/);
  assert.match(lines[4]!, /^gamma\s+planned\s+8103/);

  const json = await runCli(["list", "--json"], cliEnv(root));
  const rows = JSON.parse(json.stdout) as {
    name: string;
    mainExists: boolean;
    engines: string[];
    tools: string[];
  }[];
  assert.deepEqual(
    rows.map((r) => [r.name, r.mainExists]),
    [
      ["alpha", true],
      ["beta", false],
      ["gamma", false],
    ],
  );
  assert.deepEqual(rows[0]!.engines, ["sql", "redis"]);
  assert.deepEqual(rows[0]!.tools, ["reconcile", "seed"]);
});

test("list with no system present says none is built yet and exits 0", async (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  const result = await runCli(["list"], cliEnv(root));
  assert.equal(result.code, 0);
  assert.match(result.stdout, /No system is built yet/);
});

test("invalid manifests fail with every problem, naming the file and the field", async (t) => {
  const root = makeFixtureRoot([
    { name: "alpha", manifest: { status: "done", port: 9000, prot: 8101 } },
    { name: "beta", packageJson: "{ not json" },
    { name: "gamma", packageJson: JSON.stringify({ name: "@casebook/gamma" }) },
  ]);
  t.after(() => removeFixtureRoot(root));
  for (const command of ["list", "up"]) {
    const result = await runCli([command], cliEnv(root));
    assert.equal(result.code, 1, command);
    assert.match(result.stderr, /Invalid system manifests:/);
    assert.match(
      result.stderr,
      /systems\/alpha\/package\.json: field "casebook\.status" must be one of "working"/,
    );
    assert.match(
      result.stderr,
      /systems\/alpha\/package\.json: field "casebook\.port" must be an integer in 8100–8199/,
    );
    assert.match(result.stderr, /systems\/alpha\/package\.json: field "casebook\.prot" is not known/);
    assert.match(result.stderr, /systems\/beta\/package\.json: is not valid JSON/);
    assert.match(result.stderr, /systems\/gamma\/package\.json: field "casebook" must be an object/);
  }
});

test("a CASEBOOK_ROOT that does not exist is reported", async () => {
  const result = await runCli(["list"], cliEnv("/nonexistent/casebook-root"));
  assert.equal(result.code, 1);
  assert.match(result.stderr, /CASEBOOK_ROOT=\/nonexistent\/casebook-root is not a directory/);
});

test("run passes options it does not know, after the system's name, to the system", () => {
  const options = {
    logs: { type: "string" },
    port: { type: "string" },
    help: { type: "boolean", short: "h" },
  } as const;
  assert.deepEqual(passUnknownAfterName(["cache", "--nodes", "6", "--replicas", "1"], options), [
    "cache",
    "--",
    "--nodes",
    "6",
    "--replicas",
    "1",
  ]);
  assert.deepEqual(passUnknownAfterName(["cache", "--nodes", "6", "--logs", "raw", "--", "-v"], options), [
    "cache",
    "--logs",
    "raw",
    "--",
    "--nodes",
    "6",
    "-v",
  ]);
  assert.deepEqual(passUnknownAfterName(["--port=8150", "alpha", "-h"], options), [
    "--port=8150",
    "alpha",
    "-h",
  ]);
  // Before the name nothing is passed on: an unknown option there stays to be refused by name.
  assert.deepEqual(passUnknownAfterName(["--bogus", "alpha"], options), ["--bogus", "alpha"]);
});
