/**
 * `casebook <system> [<tool> [args…]]`: a system's own tools from its manifest, run in the
 * foreground with the system's data directory, arguments passed through, exit code kept.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { benchMain, cliEnv, makeFixtureRoot, removeFixtureRoot, runCli } from "./fixtures.ts";

test("a system's tool runs with every argument, the system's data directory and its exit code", async (t) => {
  const root = makeFixtureRoot([
    {
      name: "alpha",
      files: { "src/workers/reconcile-cli.ts": benchMain },
      manifest: { env: { GREETING: "from manifest" }, tools: { reconcile: "src/workers/reconcile-cli.ts" } },
    },
  ]);
  t.after(() => removeFixtureRoot(root));
  const result = await runCli(["alpha", "reconcile", "--date", "2026-10-22", "--exit", "3"], cliEnv(root));
  assert.equal(result.code, 3);
  const printed = JSON.parse(result.stdout) as { argv: string[]; data: string; greeting: string };
  assert.deepEqual(printed.argv, ["--date", "2026-10-22", "--exit", "3"]);
  assert.equal(
    printed.data,
    join(root, ".casebook-data", "alpha"),
    "the data directory `casebook run` gives it",
  );
  assert.equal(printed.greeting, "from manifest");

  const help = await runCli(["alpha", "reconcile", "--", "--help"], cliEnv(root));
  assert.equal(help.code, 0);
  assert.deepEqual((JSON.parse(help.stdout) as { argv: string[] }).argv, ["--help"], "`--` is dropped");
});

test("a system's name alone lists its tools; an unknown tool, or one not written, says so", async (t) => {
  const root = makeFixtureRoot([
    {
      name: "alpha",
      files: { "src/workers/reconcile-cli.ts": benchMain },
      manifest: { tools: { reconcile: "src/workers/reconcile-cli.ts", sweep: "src/workers/sweep-cli.ts" } },
    },
    { name: "beta", files: {} },
  ]);
  t.after(() => removeFixtureRoot(root));
  const listed = await runCli(["alpha"], cliEnv(root));
  assert.equal(listed.code, 0);
  // Neither entry opens with a doc comment (one is not written yet): the line names the entry.
  assert.match(listed.stdout, /casebook alpha reconcile\s+\(src\/workers\/reconcile-cli\.ts\)/);
  assert.match(listed.stdout, /casebook alpha sweep\s+\(src\/workers\/sweep-cli\.ts\)/);

  const typo = await runCli(["alpha", "reconcil"], cliEnv(root));
  assert.equal(typo.code, 2);
  assert.match(
    typo.stderr,
    /alpha has no tool 'reconcil'\.\n {2}hint: Did you mean 'reconcile'\? Its tools: reconcile, sweep\./,
  );

  const unwritten = await runCli(["alpha", "sweep"], cliEnv(root));
  assert.equal(unwritten.code, 1);
  assert.match(
    unwritten.stderr,
    /alpha's tool 'sweep' is not written yet: src\/workers\/sweep-cli\.ts does not exist/,
  );

  const none = await runCli(["beta"], cliEnv(root));
  assert.equal(none.code, 0);
  assert.match(none.stdout, /beta has no command-line tools/);

  const unknown = await runCli(["gamma", "reconcile"], cliEnv(root));
  assert.equal(unknown.code, 2, "neither a command nor a system");
  assert.match(unknown.stderr, /unknown command 'gamma'/);
});
