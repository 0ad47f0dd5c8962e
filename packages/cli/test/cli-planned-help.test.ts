/**
 * A newcomer's first contact with the CLI: `list` shows the designs of the map that are not
 * built yet as planned; `up chat` says "planned, not built yet"; `casebook <system>` describes
 * each tool in a line; `run X --help` and `help X` print the system's own settings without
 * needing its port free and without reporting a failed start.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { cliEnv, freePort, runCli } from "./fixtures.ts";

const architecture = `# map
| folder (\`systems/…\`) | design | seed |
|---|---|---|
| \`rate-limiter\` | distributed rate limiter | 000 §1 |
| \`chat\` | real-time chat with offline delivery | 000 §2 |
| \`alpha\` | the alpha design | 000 §3 |
`;

/** Prints its settings on --help (as runServiceEntry does) and exits; otherwise it would listen. */
const helpMain = `
if (process.argv.includes("--help")) {
  console.log("alpha — the alpha design\\n\\nSettings\\n  PORT  default " + process.env.PORT + "  HTTP port");
  process.exit(0);
}
console.error("alpha would start and listen here");
process.exit(5);
`;

const toolEntry = (summary: string) =>
  `/**\n * ${summary}\n *\n * More about it.\n */\nconsole.log("tool");\n`;

/** base/repo with one built system `alpha`, and base/shared/ARCHITECTURE.md beside it. */
function makeRoot(port: number): { root: string; remove(): void } {
  const base = mkdtempSync(join(tmpdir(), "casebook-planned-"));
  const root = join(base, "repo");
  const alpha = join(root, "systems", "alpha");
  mkdirSync(join(alpha, "src", "tools"), { recursive: true });
  mkdirSync(join(base, "shared"));
  writeFileSync(join(base, "shared", "ARCHITECTURE.md"), architecture);
  writeFileSync(
    join(root, "package.json"),
    JSON.stringify({ name: "fixture", private: true, workspaces: ["systems/*"] }),
  );
  const manifest = {
    title: "the alpha design",
    status: "working",
    port,
    tools: { "new-key": "src/tools/new-key.ts", seed: "src/tools/seed.ts" },
  };
  writeFileSync(
    join(alpha, "package.json"),
    JSON.stringify({ name: "@casebook/alpha", type: "module", casebook: manifest }),
  );
  writeFileSync(join(alpha, "src", "main.ts"), helpMain);
  writeFileSync(
    join(alpha, "src", "tools", "new-key.ts"),
    toolEntry("A new API key from the running service. Then more."),
  );
  writeFileSync(join(alpha, "src", "tools", "seed.ts"), "console.log('no comment');\n");
  return { root, remove: () => rmSync(base, { recursive: true, force: true }) };
}

test("list shows the map's unbuilt designs as planned; up chat says planned, not built yet", async (t) => {
  const { root, remove } = makeRoot(8140);
  t.after(remove);
  const list = await runCli(["list"], cliEnv(root));
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^alpha\s+working\s+8140\s+the alpha design/m);
  assert.match(list.stdout, /^rate-limiter\s+planned\s+8101\s+distributed rate limiter\s+—\s+—\s+—$/m);
  assert.match(list.stdout, /^chat\s+planned\s+8102\s+real-time chat with offline delivery/m);
  const json = JSON.parse((await runCli(["list", "--json"], cliEnv(root))).stdout) as {
    name: string;
    status: string;
  }[];
  assert.deepEqual(
    json.map((r) => [r.name, r.status]),
    [
      ["alpha", "working"],
      ["rate-limiter", "planned"],
      ["chat", "planned"],
    ],
  );
  for (const args of [
    ["up", "chat"],
    ["run", "chat"],
    ["help", "chat"],
  ]) {
    const up = await runCli(args, cliEnv(root));
    assert.equal(up.code, 1, up.stderr);
    assert.match(
      up.stderr,
      /chat \(real-time chat with offline delivery\) is planned, not built yet/,
      args.join(" "),
    );
    assert.doesNotMatch(up.stderr, /No system named/);
  }
});

test("without ../shared, the plan comes from README.md's systems table", async (t) => {
  const { root, remove } = makeRoot(8140);
  t.after(remove);
  rmSync(join(root, "..", "shared"), { recursive: true });
  writeFileSync(
    join(root, "README.md"),
    "# x\n\n| system | design | status |\n|---|---|---|\n" +
      "| `rate-limiter` | distributed rate limiter | planned |\n" +
      "| `chat` | real-time chat with offline delivery | planned |\n" +
      "| [`alpha`](systems/alpha/README.md) | the alpha design | **working** — it runs |\n",
  );
  const list = await runCli(["list"], cliEnv(root));
  assert.match(list.stdout, /^chat\s+planned\s+8102\s+real-time chat with offline delivery/m);
  const up = await runCli(["up", "chat"], cliEnv(root));
  assert.match(up.stderr, /chat \(real-time chat with offline delivery\) is planned, not built yet/);
});

test("casebook <system> describes each tool in a line, from its entry's opening comment", async (t) => {
  const { root, remove } = makeRoot(8140);
  t.after(remove);
  const result = await runCli(["alpha"], cliEnv(root));
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^ {2}casebook alpha new-key\s+A new API key from the running service\.$/m);
  assert.match(
    result.stdout,
    /^ {2}casebook alpha seed\s+\(src\/tools\/seed\.ts\)$/m,
    "no comment: the entry",
  );
});

test("run X --help and help X print the system's settings with its port taken, and no failed start", async (t) => {
  // The manifest's port stays in 8100–8199 (the manifest requires it); PORT, which `run`
  // honours, points at a port this test holds, so any launch would find it taken.
  const port = await freePort();
  const { root, remove } = makeRoot(8140);
  t.after(remove);
  const taken = createServer().listen(port, "127.0.0.1");
  t.after(() => taken.close());
  await new Promise((resolve) => taken.once("listening", resolve));
  for (const args of [
    ["run", "alpha", "--help"],
    ["help", "alpha"],
    ["run", "alpha", "--", "--help"],
  ]) {
    const result = await runCli(args, cliEnv(root, { PORT: String(port) }));
    assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stdout, /^alpha — the alpha design\n\nSettings\n {2}PORT/, args.join(" "));
    assert.doesNotMatch(result.stderr, /did not come up|taken|exited/, args.join(" "));
  }
  const plain = await runCli(["run", "--help"], cliEnv(root));
  assert.match(plain.stdout, /casebook run/, "without a name: the command's own help");
});
