/**
 * `casebook new` end to end: the real CLI as a child process against a temp repository
 * (CASEBOOK_ROOT) with `../shared/ARCHITECTURE.md` and a claims file beside it, as the
 * project's checkout has them. Then the generated system is proven to work, not only to
 * exist: with a `node_modules` link to this repository's (so `@casebook/*` resolve), its
 * own test file, `main.ts --help` and its bench (`--help`, and a short `--json` run whose
 * rows keep the house shape) run as Node 24 children; biome and tsc check the tree.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseBenchRows } from "@casebook/lab/bench-smoke";
import { readArchitectureMap, sharedDir } from "../src/architecture-map.ts";
import { parseClaims } from "../src/claims-file.ts";
import { main } from "../src/main.ts";
import { markInProgress } from "../src/systems-table-row.ts";
import { cliEnv, runCli } from "./fixtures.ts";

const repoRoot = join(import.meta.dirname, "..", "..", "..");
const binDir = join(repoRoot, "node_modules", ".bin");
/** Bound on each child (a generated test run starts a service and a --help child of its own). */
const childTimeoutMs = 120_000;

const architecture = `# map

| folder (\`systems/…\`) | design | seed |
|---|---|---|
| \`rate-limiter\` | distributed rate limiter | 000 §1 |
| \`chat\` | real-time chat with offline delivery | 000 §2 |
| \`feed\` | news feed / timeline | 000 §3 |
| \`payments\` | payments and double-entry ledger | 000 §4 |
| \`video\` | video upload, transcoding, streaming | 000 §5 |
| \`kv-store\` | Dynamo-style distributed key-value store | 000 §6 |
| \`file-sync\` | file sync and storage (Dropbox-like) | 000 §7 |
| \`flash-sale\` | ticket flash sale | 000 §8 |
| \`url-shortener\` | global URL shortener | 000 §9 |
`;

const flashSaleClaims = `# flash-sale — claims (seed 000 §8)

- FS-01 Never sell more tickets than exist.
- FS-02 Stated assumptions: 5,000 units | 10 minutes to pay.
- FS-03 The race: naive code sells one ticket twice.
`;

/** The root README's systems table: a planned flash-sale row, and none for url-shortener. */
const rootReadme = `# fixture

| system | design | status |
|---|---|---|
| [\`payments\`](systems/payments/README.md) | payments and double-entry ledger | **working** |
| \`flash-sale\` | ticket flash sale | planned |
`;

interface NewRoot {
  /** The repository (CASEBOOK_ROOT); `../shared` is beside it. */
  root: string;
  remove(): void;
}

/** A temp repository with one existing system (`payments` on 8104) and the shared docs beside it. */
function makeNewRoot(
  existing: { name: string; port: number }[] = [{ name: "payments", port: 8104 }],
): NewRoot {
  const base = mkdtempSync(join(tmpdir(), "casebook-new-"));
  const root = join(base, "repo");
  mkdirSync(join(root, "systems"), { recursive: true });
  mkdirSync(join(base, "shared", "claims"), { recursive: true });
  writeFileSync(join(base, "shared", "ARCHITECTURE.md"), architecture);
  writeFileSync(join(base, "shared", "claims", "flash-sale.md"), flashSaleClaims);
  writeFileSync(
    join(root, "package.json"),
    JSON.stringify({ name: "fixture", private: true, type: "module", workspaces: ["systems/*"] }),
  );
  writeFileSync(join(root, "README.md"), rootReadme);
  for (const { name, port } of existing) {
    mkdirSync(join(root, "systems", name));
    const manifest = { title: `fixture ${name}`, status: "working", port };
    writeFileSync(
      join(root, "systems", name, "package.json"),
      JSON.stringify({ name: `@casebook/${name}`, type: "module", casebook: manifest }),
    );
  }
  return { root, remove: () => rmSync(base, { recursive: true, force: true }) };
}

/** The CLI's own main() with captured output: the refusals need no process of their own. */
async function runInProcess(args: readonly string[], env: NodeJS.ProcessEnv) {
  let stdout = "";
  let stderr = "";
  const io = {
    out: (text: string) => {
      stdout += text;
    },
    err: (text: string) => {
      stderr += text;
    },
    env,
    stdoutIsTty: false,
    cliDir: join(repoRoot, "packages", "cli", "src"),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

function run(file: string, args: readonly string[], cwd: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const env = cliEnv(cwd);
    delete env.CASEBOOK_ROOT;
    delete env.NODE_TEST_CONTEXT; // a node --test child inside a test would otherwise report to this run
    execFile(
      file,
      args,
      { cwd, env, timeout: childTimeoutMs, maxBuffer: 10_000_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

test("new --help explains the command, its options and what it refuses", async (t) => {
  const { root, remove } = makeNewRoot();
  t.after(remove);
  const result = await runCli(["new", "--help"], cliEnv(root));
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^casebook new — /);
  for (const flag of ["--title", "--seed", "--port", "--dry-run"])
    assert.match(result.stdout, new RegExp(flag));
  const top = await runCli(["--help"], cliEnv(root));
  assert.match(top.stdout, /^ {2}new <name> /m);
});

test("new refuses with exit 2 and writes nothing: a bad name, a command's name, an existing system, a held port", async (t) => {
  const { root, remove } = makeNewRoot();
  t.after(remove);
  const env = cliEnv(root);
  const cases: Array<[string[], RegExp]> = [
    [["new"], /takes exactly one system name \(got 0\)/],
    [["new", "a", "b"], /takes exactly one system name \(got 2\)/],
    [
      ["new", "FlashSale"],
      /'FlashSale' is not a system name: lowercase kebab-case[\s\S]*casebook new flash-sale/,
    ],
    [["new", "flash_sale"], /not a system name/],
    [["new", "-x"], /unknown option '-x'/],
    [["new", "list"], /'list' is a casebook command/],
    [["new", "payments"], /systems\/payments exists already/],
    [["new", "flash-sale", "--port", "8104"], /port 8104 is payments's[\s\S]*hint: Try --port 8100/],
    [
      ["new", "flash-sale", "--port", "9000"],
      /--port 9000 is not valid: HTTP services take a port in 8100–8199/,
    ],
    [
      ["new", "search"],
      /search is not in the systems table of shared\/ARCHITECTURE\.md, so --title is needed/,
    ],
    [["new", "search", "--title", 'say "hi"'], /--title "say \\"hi\\"" is not valid/],
    [["new", "search", "--title", "full-text search", "--seed", "5; rm"], /--seed "5; rm" is not valid/],
  ];
  for (const [args, pattern] of cases) {
    const result = await runInProcess(args, env);
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, pattern, args.join(" "));
  }
  assert.equal(existsSync(join(root, "systems", "flash-sale")), false);
  assert.equal(existsSync(join(root, "systems", "search")), false);
});

test("new --dry-run lists the files and writes none", async (t) => {
  const { root, remove } = makeNewRoot();
  t.after(remove);
  const result = await runCli(["new", "flash-sale", "--dry-run"], cliEnv(root));
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /^Would write \d+ files \(flash-sale — ticket flash sale \(seed 000 §8\), port 8108; 3 claims\)/,
  );
  for (const file of [
    "package.json",
    "README.md",
    "src/main.ts",
    "src/config.ts",
    "src/errors.ts",
    "src/metrics.ts",
    "src/api/register-api.ts",
    "test/main.test.ts",
    "test/edge-contract.test.ts",
    "test/mutations.json",
    "bench/main.ts",
  ]) {
    assert.match(result.stdout, new RegExp(`^ {2}systems/flash-sale/${file}$`, "m"), file);
  }
  assert.match(
    result.stdout,
    /^and change README\.md: its row in the systems table, planned → in progress$/m,
  );
  assert.equal(existsSync(join(root, "systems", "flash-sale")), false);
  assert.equal(readFileSync(join(root, "README.md"), "utf8"), rootReadme);
});

test("markInProgress links the planned row and leaves every other row and text alone", () => {
  assert.equal(
    markInProgress(rootReadme, "flash-sale"),
    rootReadme.replace(
      "| `flash-sale` | ticket flash sale | planned |",
      "| [`flash-sale`](systems/flash-sale/README.md) | ticket flash sale | in progress |",
    ),
  );
  assert.equal(markInProgress(rootReadme, "payments"), undefined);
  assert.equal(markInProgress(rootReadme, "flash"), undefined);
  assert.equal(
    markInProgress("| `flash-sale` | ticket flash sale | in progress |\n", "flash-sale"),
    undefined,
  );
});

test("new takes title, seed and port from the map, a row per claim, and prints the next steps", async (t) => {
  const { root, remove } = makeNewRoot();
  t.after(remove);
  const result = await runCli(["new", "flash-sale"], cliEnv(root));
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /npm install[\s\S]*npx casebook run flash-sale[\s\S]*npm test/);
  assert.match(result.stdout, /^Changed README\.md: its row in the systems table, planned → in progress\.$/m);
  assert.doesNotMatch(result.stdout, /add its row/);
  assert.match(
    readFileSync(join(root, "README.md"), "utf8"),
    /^\| \[`flash-sale`\]\(systems\/flash-sale\/README\.md\) \| ticket flash sale \| in progress \|$/m,
  );
  const dir = join(root, "systems", "flash-sale");
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  assert.equal(pkg.name, "@casebook/flash-sale");
  assert.deepEqual(pkg.casebook, {
    title: "ticket flash sale",
    status: "in progress",
    main: "src/main.ts",
    bench: "bench/main.ts",
    port: 8108,
    engines: [],
  });
  assert.equal(pkg.dependencies["@casebook/infra"], "*");
  assert.equal(pkg.dependencies["@casebook/kit"], "*");
  assert.equal(pkg.devDependencies["@casebook/lab"], "*");
  const readme = readFileSync(join(dir, "README.md"), "utf8");
  assert.match(readme, /^# flash-sale — ticket flash sale \(seed 000 §8\)\n/);
  const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  assert.deepEqual(headings, [
    "Run it",
    "API",
    "Design: mechanism → file",
    "Claims",
    "Mutation check",
    "Failure modes",
    "Bench",
  ]);
  assert.match(readme, /^\| FS-01 \| Never sell more tickets than exist\. \| — \| not yet \|$/m);
  assert.match(
    readme,
    /^\| FS-02 \| Stated assumptions: 5,000 units \\\| 10 minutes to pay\. \| — \| not yet \|$/m,
  );
  assert.match(readme, /^\| FS-03 \| /m);
  assert.doesNotMatch(readme, /\{\{/);
  // The CLI reads the new manifest like any other.
  const list = await runCli(["list", "--json"], cliEnv(root));
  assert.equal(list.code, 0, list.stderr);
  const listed = (JSON.parse(list.stdout) as { name: string; status: string; port: number }[]).find(
    (s) => s.name === "flash-sale",
  );
  assert.deepEqual({ status: listed?.status, port: listed?.port }, { status: "in progress", port: 8108 });
  // Once it exists, a second `new` refuses.
  const again = await runCli(["new", "flash-sale"], cliEnv(root));
  assert.equal(again.code, 2);
});

test("new picks the lowest free port when the map's is held, and says when there is no claims file", async (t) => {
  const { root, remove } = makeNewRoot([
    { name: "other", port: 8109 },
    { name: "first", port: 8100 },
  ]);
  t.after(remove);
  const result = await runCli(["new", "url-shortener"], cliEnv(root));
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /port 8101; no claims file/);
  assert.match(result.stdout, /add its row to the systems table of README\.md/);
  const readme = readFileSync(join(root, "systems", "url-shortener", "README.md"), "utf8");
  assert.match(readme, /^# url-shortener — global URL shortener \(seed 000 §9\)\n/);
  assert.match(readme, /^\| — \| no `shared\/claims\/url-shortener\.md` yet \| — \| — \|$/m);
  const custom = await runCli(
    ["new", "search", "--title", "full-text search", "--seed", "005", "--port", "8150"],
    cliEnv(root),
  );
  assert.equal(custom.code, 0, custom.stderr);
  const pkg = JSON.parse(readFileSync(join(root, "systems", "search", "package.json"), "utf8"));
  assert.equal(pkg.casebook.port, 8150);
  assert.match(
    readFileSync(join(root, "systems", "search", "README.md"), "utf8"),
    /^# search — full-text search \(seed 005\)\n/,
  );
});

test("the generated system works: its tests pass, main.ts --help and its bench run, biome and tsc find nothing", async (t) => {
  const { root, remove } = makeNewRoot();
  t.after(remove);
  symlinkSync(join(repoRoot, "node_modules"), join(root, "node_modules"));
  // The shortest and the longest names a line can hold: the formatter must be happy with both.
  const longName = "a-very-long-system-name-for-the-lint-tes";
  for (const args of [
    ["new", "flash-sale"],
    ["new", longName, "--title", "a long one", "--seed", "000 §12"],
  ]) {
    const made = await runCli(args, cliEnv(root));
    assert.equal(made.code, 0, made.stderr);
  }
  const dir = join(root, "systems", "flash-sale");

  const tests = await run(
    process.execPath,
    [
      "--test",
      "--test-reporter=tap",
      "--test-concurrency=1",
      "test/main.test.ts",
      "test/errors.test.ts",
      "test/edge-contract.test.ts",
    ],
    dir,
  );
  assert.equal(tests.code, 0, `${tests.stdout}\n${tests.stderr}`);
  // 6 of main.test.ts, 1 of errors.test.ts, 2 of the edge contract's ops-routes part.
  assert.match(tests.stdout, /^# pass 9$/m);
  assert.match(tests.stdout, /^# fail 0$/m);

  const help = await run(process.execPath, ["src/main.ts", "--help"], dir);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^flash-sale — ticket flash sale \(seed 000 §8\)$/m);
  assert.match(help.stdout, /^ {2}PORT +default 8108 /m);

  const benchHelp = await run(process.execPath, ["bench/main.ts", "--help"], dir);
  assert.equal(benchHelp.code, 0, benchHelp.stderr);
  assert.match(benchHelp.stdout, /the template's placeholder/);
  const badFlag = await run(process.execPath, ["bench/main.ts", "--rate-per-s", "0"], dir);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /--rate-per-s: must be an integer in \[1, 50000\], got 0/);
  const bench = await run(
    process.execPath,
    ["bench/main.ts", "--json", "--rate-per-s", "50", "--duration-ms", "600", "--warmup-ms", "100"],
    dir,
  );
  assert.equal(bench.code, 0, bench.stderr);
  const rows = parseBenchRows(bench.stdout);
  assert.ok(rows.every((row) => row.system === "flash-sale"));
  assert.deepEqual(
    rows.find((row) => row.metric === "errors"),
    {
      system: "flash-sale",
      scenario: "GET /healthz, open loop 50/s",
      metric: "errors",
      unit: "count",
      value: 0,
    },
  );

  const biomeConfig = JSON.parse(readFileSync(join(repoRoot, "biome.json"), "utf8"));
  biomeConfig.vcs = { enabled: false };
  writeFileSync(join(root, "biome.json"), JSON.stringify(biomeConfig));
  const lint = await run(join(binDir, "biome"), ["check", "systems/flash-sale", `systems/${longName}`], root);
  assert.equal(lint.code, 0, `${lint.stdout}\n${lint.stderr}`);

  const tsconfig = JSON.parse(readFileSync(join(repoRoot, "tsconfig.json"), "utf8"));
  tsconfig.include = ["systems/*/src", "systems/*/test", "systems/*/bench"];
  writeFileSync(join(root, "tsconfig.json"), JSON.stringify(tsconfig));
  const types = await run(join(binDir, "tsc"), ["--noEmit", "-p", "tsconfig.json"], root);
  assert.equal(types.code, 0, `${types.stdout}\n${types.stderr}`);
});

test("the project's own shared docs: every claim of every claims file parses, and the map's rows are the four systems' ports", (t) => {
  const shared = sharedDir(repoRoot);
  if (!existsSync(join(shared, "ARCHITECTURE.md"))) {
    t.skip(`no ${shared}/ARCHITECTURE.md beside this checkout`);
    return;
  }
  for (const file of readdirSync(join(shared, "claims")).filter(
    (f) => f.endsWith(".md") && f !== "README.md",
  )) {
    const text = readFileSync(join(shared, "claims", file), "utf8");
    const lines = text.split("\n").filter((line) => line.startsWith("- "));
    assert.equal(parseClaims(text).length, lines.length, file);
  }
  const map = readArchitectureMap(repoRoot);
  for (const name of ["flash-sale", "url-shortener", "chat", "feed", "llm-gateway", "metrics"]) {
    assert.ok(map.has(name), name);
  }
  for (const system of ["rate-limiter", "payments", "webhooks", "cache"]) {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "systems", system, "package.json"), "utf8"));
    assert.equal(pkg.casebook.port, 8100 + map.get(system)!.row, system);
  }
});
