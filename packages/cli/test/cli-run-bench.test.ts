import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  alive,
  benchMain,
  cliEnv,
  freePort,
  healthyMain,
  makeFixtureRoot,
  readPid,
  removeFixtureRoot,
  runCli,
  startCli,
} from "./fixtures.ts";

// The tests wait on child processes (the CLI and what it starts), each in its own fixture root: run them side by side.
describe("cli-run-bench", { concurrency: 4 }, () => {
  test("run starts one system in the foreground with PORT and the arguments after --", async (t) => {
    const root = makeFixtureRoot([
      { name: "alpha", files: { "src/main.ts": healthyMain } },
      { name: "beta", files: { "src/main.ts": healthyMain } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const port = await freePort();
    const cli = startCli(
      ["run", "alpha", "--logs", "pretty", "--", "--greeting", "hi"],
      cliEnv(root, { PORT: String(port) }),
    );
    await cli.waitFor(/system\(s\) up/);
    assert.match(
      cli.stdout(),
      new RegExp(
        `alpha\\s+http://127\\.0\\.0\\.1:${port}\\s+pglite \\(embedded\\) \\+ in-process \\(embedded\\)\\s+fixture alpha`,
      ),
    );
    assert.match(
      cli.stdout(),
      /^alpha \| \d\d:\d\d:\d\d\.\d{3} INFO {2}listening port=\d+$/m,
      "pretty log form",
    );
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    const given = (await res.json()) as { argv: string[] };
    assert.deepEqual(given.argv, ["--greeting", "hi"]);
    assert.doesNotMatch(cli.stderr(), /starting beta/);
    const pid = readPid(root, "alpha");
    cli.child.kill("SIGINT");
    assert.equal(await cli.exited, 0);
    assert.equal(alive(pid), false);
  });

  test("run ends with the system's own exit code when it exits on its own", async (t) => {
    const root = makeFixtureRoot([{ name: "alpha", files: { "src/main.ts": healthyMain } }]);
    t.after(() => removeFixtureRoot(root));
    const port = await freePort();
    const cli = startCli(["run", "alpha", "--port", String(port)], cliEnv(root));
    await cli.waitFor(/system\(s\) up/);
    await (await fetch(`http://127.0.0.1:${port}/quit`)).text();
    assert.equal(await cli.exited, 4);
    assert.match(cli.stderr(), /alpha exited \(exit code 4\)/);
  });

  test("run takes exactly one name", async (t) => {
    const root = makeFixtureRoot([]);
    t.after(() => removeFixtureRoot(root));
    const none = await runCli(["run"], cliEnv(root));
    assert.equal(none.code, 2);
    assert.match(none.stderr, /takes exactly one system name \(got 0\)/);
    const two = await runCli(["run", "a", "b"], cliEnv(root));
    assert.equal(two.code, 2);
  });

  test("run on a system whose main.ts is not written yet names the file", async (t) => {
    const root = makeFixtureRoot([{ name: "alpha", manifest: { status: "in progress" } }]);
    t.after(() => removeFixtureRoot(root));
    const result = await runCli(["run", "alpha"], cliEnv(root));
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /alpha \(in progress\) has no src\/main\.ts yet \(casebook\.main in systems\/alpha\/package\.json\)/,
    );
  });

  test("bench runs the bench entry, passes every argument through and forwards the exit code", async (t) => {
    const root = makeFixtureRoot([
      {
        name: "alpha",
        files: { "bench/main.ts": benchMain, "bench/other.ts": benchMain },
        manifest: { env: { GREETING: "from manifest" } },
      },
      { name: "beta", files: { "perf/run.ts": benchMain }, manifest: { bench: "perf/run.ts" } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const failing = await runCli(["bench", "alpha", "--json", "--exit", "7"], cliEnv(root));
    assert.equal(failing.code, 7);
    const printed = JSON.parse(failing.stdout) as { argv: string[]; data: string; greeting: string };
    assert.deepEqual(printed.argv, ["--json", "--exit", "7"]);
    assert.equal(printed.greeting, "from manifest");
    assert.equal(printed.data, join(root, ".casebook-data", "alpha-bench"));

    const passing = await runCli(["bench", "beta", "--", "--help"], cliEnv(root));
    assert.equal(passing.code, 0);
    assert.deepEqual(
      (JSON.parse(passing.stdout) as { argv: string[] }).argv,
      ["--help"],
      "manifest's bench path",
    );
  });

  test("bench without a benchmark, without a name, or on an unknown system says what is wrong", async (t) => {
    const root = makeFixtureRoot([
      { name: "alpha", files: { "bench/main.ts": benchMain } },
      { name: "beta", manifest: { status: "planned" } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const missing = await runCli(["bench", "beta"], cliEnv(root));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /beta has no benchmark yet: bench\/main\.ts does not exist/);
    const noName = await runCli(["bench"], cliEnv(root));
    assert.equal(noName.code, 2);
    assert.match(noName.stderr, /needs the system's name\.\n {2}hint: Systems with a benchmark: alpha\./);
    const flagFirst = await runCli(["bench", "--json", "alpha"], cliEnv(root));
    assert.equal(flagFirst.code, 2);
    assert.match(flagFirst.stderr, /put the system's name first/);
    const unknown = await runCli(["bench", "gamma"], cliEnv(root));
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /No system named 'gamma'/);
  });

  test("bench forwards SIGTERM to the benchmark and ends with its signal's exit code", async (t) => {
    const waiting = `console.log("running"); setInterval(() => {}, 1_000);`;
    const root = makeFixtureRoot([{ name: "alpha", files: { "bench/main.ts": waiting } }]);
    t.after(() => removeFixtureRoot(root));
    const cli = startCli(["bench", "alpha"], cliEnv(root));
    await cli.waitFor(/running/);
    cli.child.kill("SIGTERM");
    assert.equal(await cli.exited, 128 + 15);
  });
});
