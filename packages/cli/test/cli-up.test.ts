import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  alive,
  cliEnv,
  crashAfterPeerMain,
  freePort,
  healthyMain,
  makeFixtureRoot,
  readPid,
  removeFixtureRoot,
  runCli,
  startCli,
  stubbornMain,
  unhealthyMain,
} from "./fixtures.ts";

async function healthz(port: number): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown>;
}

// The tests wait on child processes (a CLI and the systems it starts), each in its own fixture root on its own free ports: run them side by side.
describe("cli-up", { concurrency: 4 }, () => {
  test("up starts every system, prints where each listens, and SIGTERM stops them all with exit 0", async (t) => {
    const root = makeFixtureRoot([
      { name: "alpha", files: { "src/main.ts": healthyMain }, manifest: { env: { GREETING: "hello" } } },
      { name: "beta", files: { "src/main.ts": healthyMain } },
      { name: "gamma", manifest: { status: "planned" } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const [alphaPort, betaPort] = [await freePort(), await freePort()];
    const env = cliEnv(root, {
      CASEBOOK_PORT_BETA: String(betaPort),
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/x",
    });
    const cli = startCli(["up", "--port", `alpha=${alphaPort}`, "--logs", "raw"], env);
    await cli.waitFor(/system\(s\) up/);

    const table = cli.stdout();
    assert.match(
      table,
      new RegExp(`alpha\\s+http://127\\.0\\.0\\.1:${alphaPort}\\s+postgres \\+ in-process \\(embedded\\)`),
    );
    assert.match(table, new RegExp(`beta\\s+http://127\\.0\\.0\\.1:${betaPort}`));
    assert.doesNotMatch(table, /gamma\s+http/);
    assert.match(cli.stderr(), /skipping gamma \(planned\)/);
    assert.match(
      table,
      /^alpha \| \{"level":30,.*"msg":"listening"/m,
      "JSON log lines pass through, prefixed",
    );
    assert.match(cli.stderr(), /^beta {2}\| ready on stderr too$/m);

    const alpha = await healthz(alphaPort);
    assert.equal(alpha.port, String(alphaPort));
    assert.equal(alpha.host, "127.0.0.1");
    assert.equal(alpha.greeting, "hello", "manifest env defaults reach the child");
    assert.equal(alpha.databaseUrl, "postgres://nobody@127.0.0.1:1/x", "DATABASE_URL passes through");
    assert.equal(alpha.data, join(root, ".casebook-data", "alpha"));
    await healthz(betaPort);
    const pids = [readPid(root, "alpha"), readPid(root, "beta")];

    cli.child.kill("SIGTERM");
    assert.equal(await cli.exited, 0, cli.stderr());
    for (const pid of pids) assert.equal(alive(pid), false, `child ${pid} still running`);
    assert.ok(
      existsSync(join(root, ".casebook-data", "alpha", "stopped")),
      "alpha got SIGTERM and shut down itself",
    );
    assert.ok(
      existsSync(join(root, ".casebook-data", "beta", "stopped")),
      "beta got SIGTERM and shut down itself",
    );
    assert.match(cli.stderr(), /casebook: stopped/);
  });

  test("up on a system that dies on start shows its stderr, stops the others and exits non-zero", async (t) => {
    const [alphaPort, betaPort] = [await freePort(), await freePort()];
    const root = makeFixtureRoot([
      { name: "alpha", files: { "src/main.ts": healthyMain } },
      {
        name: "beta",
        files: { "src/main.ts": crashAfterPeerMain },
        manifest: { env: { WAIT_FOR_URL: `http://127.0.0.1:${alphaPort}/healthz` } },
      },
    ]);
    t.after(() => removeFixtureRoot(root));
    const env = cliEnv(root);
    const result = await runCli(["up", "--port", `alpha=${alphaPort}`, "--port", `beta=${betaPort}`], env);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /beta exited during start \(exit code 3\)/);
    assert.match(
      result.stderr,
      /last 2 stderr line\(s\) of beta:\n {4}connecting to the database…\n {4}boom: cannot open/,
    );
    assert.match(result.stderr, /beta did not come up; the other systems were stopped/);
    assert.doesNotMatch(result.stdout, /^system\s+url/m, "no ready table after a failed start");
    const alphaPid = readPid(root, "alpha");
    assert.equal(alive(alphaPid), false);
    assert.ok(existsSync(join(root, ".casebook-data", "alpha", "stopped")), "alpha was stopped with SIGTERM");
  });

  test("up gives up on a system that never answers /healthz within --health-timeout-ms", async (t) => {
    const root = makeFixtureRoot([{ name: "slow", files: { "src/main.ts": unhealthyMain } }]);
    t.after(() => removeFixtureRoot(root));
    const port = await freePort();
    // 3 s, not less: the bound starts at spawn, and on a loaded machine Node may not even have run the
    // child's first line (the "still warming up" the report must quote) within half a second.
    const result = await runCli(
      ["up", "--port", `slow=${port}`, "--health-timeout-ms", "3000"],
      cliEnv(root),
    );
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /slow did not answer GET http:\/\/127\.0\.0\.1:\d+\/healthz with 200 within 3000 ms/,
    );
    assert.match(result.stderr, /still warming up/);
  });

  test("a child that ignores SIGTERM is killed after --stop-timeout-ms and the CLI still exits 0", async (t) => {
    const root = makeFixtureRoot([{ name: "stubborn", files: { "src/main.ts": stubbornMain } }]);
    t.after(() => removeFixtureRoot(root));
    const port = await freePort();
    const cli = startCli(["up", "--port", `stubborn=${port}`, "--stop-timeout-ms", "300"], cliEnv(root));
    await cli.waitFor(/system\(s\) up/);
    const pid = readPid(root, "stubborn");
    cli.child.kill("SIGINT");
    assert.equal(await cli.exited, 0);
    assert.match(cli.stderr(), /stubborn ignored SIGTERM for 300 ms; killed it/);
    assert.equal(alive(pid), false);
  });

  test("a taken port is named, with how to override it, before anything starts", async (t) => {
    const root = makeFixtureRoot([{ name: "alpha", files: { "src/main.ts": healthyMain } }]);
    t.after(() => removeFixtureRoot(root));
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    t.after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const { port } = blocker.address() as { port: number };

    const up = await runCli(["up"], cliEnv(root, { CASEBOOK_PORT_ALPHA: String(port) }));
    assert.equal(up.code, 1);
    assert.match(
      up.stderr,
      new RegExp(`alpha needs 127\\.0\\.0\\.1:${port} \\(already in use by another process\\)`),
    );
    assert.match(up.stderr, /casebook up --port alpha=8150/);
    assert.match(up.stderr, /CASEBOOK_PORT_ALPHA=8150 npm start/);
    assert.equal(existsSync(join(root, ".casebook-data", "alpha", "pid")), false, "nothing was started");

    const run = await runCli(["run", "alpha"], cliEnv(root, { PORT: String(port) }));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /PORT=8150 casebook run alpha/);
  });

  test("two manifests on one port: list reports it, up refuses until one is overridden", async (t) => {
    const root = makeFixtureRoot([
      { name: "alpha", files: { "src/main.ts": healthyMain }, manifest: { port: 8123 } },
      { name: "beta", files: { "src/main.ts": healthyMain }, manifest: { port: 8123 } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const list = await runCli(["list"], cliEnv(root));
    assert.equal(list.code, 1);
    assert.match(list.stderr, /port 8123 is claimed by alpha and beta/);
    const up = await runCli(["up"], cliEnv(root));
    assert.equal(up.code, 1);
    assert.match(up.stderr, /Two systems would listen on the same port \(port 8123: alpha, beta\)/);
    assert.match(up.stderr, /--port beta=8150/);
  });

  test("up with no system present says so and exits 0", async (t) => {
    const root = makeFixtureRoot([]);
    t.after(() => removeFixtureRoot(root));
    const result = await runCli(["up"], cliEnv(root));
    assert.equal(result.code, 0);
    assert.match(result.stdout, /No system is built yet/);
  });

  test("up with only planned or unwritten systems says none is built yet and exits 0", async (t) => {
    const root = makeFixtureRoot([
      { name: "alpha", manifest: { status: "planned" } },
      { name: "beta", manifest: { status: "in progress" } },
    ]);
    t.after(() => removeFixtureRoot(root));
    const result = await runCli(["up"], cliEnv(root));
    assert.equal(result.code, 0);
    assert.match(result.stdout, /No system is built yet: 2 found/);
    assert.match(result.stderr, /skipping beta \(in progress, src\/main\.ts not written yet\)/);
  });

  test("up with a name that is not a system exits 2 with a guess", async (t) => {
    const root = makeFixtureRoot([{ name: "alpha", files: { "src/main.ts": healthyMain } }]);
    t.after(() => removeFixtureRoot(root));
    const result = await runCli(["up", "alpah"], cliEnv(root));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /No system named 'alpah'\.\n {2}hint: Did you mean 'alpha'\?/);
    const port = await runCli(["up", "--port", "alpah=8150"], cliEnv(root));
    assert.equal(port.code, 2);
    assert.match(port.stderr, /no system named 'alpah'\.\n {2}hint: Did you mean 'alpha'\?/);
  });

  test("SIGTERM while systems are still starting stops them and exits 0", async (t) => {
    const root = makeFixtureRoot([{ name: "slow", files: { "src/main.ts": unhealthyMain } }]);
    t.after(() => removeFixtureRoot(root));
    const port = await freePort();
    const cli = startCli(["up", "--port", `slow=${port}`], cliEnv(root));
    await cli.waitFor(/still warming up/);
    cli.child.kill("SIGTERM");
    assert.equal(await cli.exited, 0, cli.stderr());
    assert.match(cli.stderr(), /SIGTERM, stopping 1 system\(s\)…\ncasebook: stopped/);
    assert.doesNotMatch(cli.stderr(), /did not come up/);
  });
});
