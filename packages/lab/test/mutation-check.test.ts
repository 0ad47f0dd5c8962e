import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ownTempDir } from "../src/child-reaper.ts";
import { eventually } from "../src/eventually.ts";
import { labErrors } from "../src/lab-errors.ts";
import {
  allCaught,
  applyMutation,
  checkBaseline,
  checkMutations,
  mutationReport,
  recoverOriginals,
} from "../src/mutation-check.ts";
import { type Mutation, parseMutationList, readMutationList } from "../src/mutation-list.ts";
import { descendants } from "../src/process-tree.ts";
import { spawnChild } from "../src/spawn-child.ts";

const CLAMP = `export function refill(tokens: number, elapsedMs: number): number {
  return Math.min(10, tokens + Math.max(0, elapsedMs) / 100);
}
export function unused(): number {
  return 1;
}
`;
const CLAMP_TEST = `import assert from "node:assert/strict";
import { test } from "node:test";
import { refill } from "../src/clamp.ts";
test("XX-01 a clock stepping back mints nothing", () => {
  assert.equal(refill(3, -500), 3);
});
test("XX-01 the bucket never exceeds its capacity", () => {
  assert.equal(refill(9, 10_000), 10);
});
`;
const HANG_TEST = `import { test } from "node:test";
import { refill } from "../src/clamp.ts";
test("waits for ever", () => new Promise(() => { refill(1, 1); setInterval(() => {}, 1000); }));
`;

const MUTATIONS: Mutation[] = [
  {
    id: "clamp-abs",
    claim: "XX-01",
    file: "src/clamp.ts",
    find: "Math.max(0, elapsedMs)",
    replace: "Math.abs(elapsedMs)",
    tests: ["test/clamp.test.ts"],
  },
  {
    id: "capacity-plus-one",
    claim: "XX-01",
    file: "src/clamp.ts",
    find: "Math.min(10,",
    replace: "Math.min(11,",
    tests: ["test/clamp.test.ts"],
  },
  {
    id: "untested-code",
    claim: "XX-02",
    file: "src/clamp.ts",
    find: "return 1;",
    replace: "return 2;",
    tests: ["test/clamp.test.ts"],
  },
];

/** A repository with one system `demo`: a clamp, its tests, and the mutation list. */
async function fixture(t: {
  after(fn: () => Promise<void>): void;
}): Promise<{ root: string; systemDir: string }> {
  const { dir, remove } = await ownTempDir("mutation-check-");
  t.after(remove);
  const systemDir = join(dir, "systems", "demo");
  mkdirSync(join(systemDir, "src"), { recursive: true });
  mkdirSync(join(systemDir, "test"), { recursive: true });
  writeFileSync(join(dir, "package.json"), '{"type":"module"}');
  writeFileSync(join(systemDir, "src", "clamp.ts"), CLAMP);
  writeFileSync(join(systemDir, "test", "clamp.test.ts"), CLAMP_TEST);
  writeFileSync(join(systemDir, "test", "hang.test.ts"), HANG_TEST);
  writeFileSync(join(systemDir, "test", "mutations.json"), JSON.stringify(MUTATIONS));
  return { root: dir, systemDir };
}

const options = (root: string) => ({ runTimeoutMs: 120_000, testTimeoutMs: 60_000, cwd: root });

test("a flipped clamp and a raised capacity are caught by the failing test; a mutation of untested code survives; the file is restored", async (t) => {
  const { root, systemDir } = await fixture(t);
  const mutations = readMutationList(systemDir);
  await checkBaseline(systemDir, mutations, options(root));
  const results = await checkMutations(systemDir, mutations, options(root));
  assert.deepEqual(
    results.map((r) => [r.mutation.id, r.outcome, r.run.failed.map((f) => f.name)]),
    [
      ["clamp-abs", "caught", ["XX-01 a clock stepping back mints nothing"]],
      ["capacity-plus-one", "caught", ["XX-01 the bucket never exceeds its capacity"]],
      ["untested-code", "survived", []],
    ],
  );
  assert.equal(allCaught(results), false);
  assert.equal(readFileSync(join(systemDir, "src", "clamp.ts"), "utf8"), CLAMP);
  assert.equal(existsSync(join(systemDir, "src", "clamp.ts.mutation-original")), false);
  const report = mutationReport(results).split("\n");
  assert.equal(report[0], "| mutation | claim | change | caught? | failing test |");
  assert.equal(
    report[2],
    "| clamp-abs | XX-01 | src/clamp.ts: `Math.max(0, elapsedMs)` → `Math.abs(elapsedMs)` | yes | clamp.test.ts › XX-01 a clock stepping back mints nothing |",
  );
  assert.match(report[4] ?? "", /^\| untested-code \| XX-02 \| .* \| \*\*no\*\* \| — \|$/);
});

test("a mutation that breaks the module's syntax is caught through the test file that fails to load", async (t) => {
  const { root, systemDir } = await fixture(t);
  const broken = { ...(MUTATIONS[0] as Mutation), id: "syntax", replace: "Math.max(0," };
  const [result] = await checkMutations(systemDir, [broken], options(root));
  assert.equal(result?.outcome, "caught");
  assert.ok((result?.run.failed.length ?? 0) >= 1);
});

test("a find text that occurs twice (or never) is refused before anything is written", async (t) => {
  const { systemDir } = await fixture(t);
  for (const find of ["return", "no such text"]) {
    assert.throws(
      () => applyMutation(systemDir, { ...(MUTATIONS[0] as Mutation), find }),
      (error) => labErrors.is(error, "LAB_MUTATION_INVALID") && /occurs \d times/.test(error.message),
    );
    assert.equal(readFileSync(join(systemDir, "src", "clamp.ts"), "utf8"), CLAMP);
  }
});

test("a bad list entry is refused naming its index and field", async (t) => {
  const { systemDir } = await fixture(t);
  const cases: [unknown, string][] = [
    [{}, "not an array"],
    [[{ ...MUTATIONS[0], id: "Not Kebab" }], "[0].id"],
    [[{ ...MUTATIONS[0], claim: "rl5" }], "[0].claim"],
    [[{ ...MUTATIONS[0], file: "../../../etc/passwd" }], "[0].file"],
    [[{ ...MUTATIONS[0], file: "/etc/passwd" }], "[0].file"],
    [[{ ...MUTATIONS[0], file: "src/missing.ts" }], "[0].file"],
    [[{ ...MUTATIONS[0], replace: MUTATIONS[0]?.find }], "[0].replace"],
    [[{ ...MUTATIONS[0], tests: [] }], "[0].tests"],
    [[{ ...MUTATIONS[0], extra: 1 }], "[0].extra"],
    [[MUTATIONS[0], MUTATIONS[0]], "id"],
  ];
  for (const [list, field] of cases) {
    assert.throws(
      () => parseMutationList(JSON.stringify(list), systemDir),
      (error) =>
        labErrors.is(error, "LAB_MUTATION_INVALID") &&
        (field === "not an array" || error.fields.field === field),
      field,
    );
  }
});

test("a runner killed mid-run leaves the original beside the file, and the next run puts it back", async (t) => {
  const { systemDir } = await fixture(t);
  applyMutation(systemDir, MUTATIONS[0] as Mutation); // never restored: as if SIGKILLed
  assert.notEqual(readFileSync(join(systemDir, "src", "clamp.ts"), "utf8"), CLAMP);
  assert.deepEqual(recoverOriginals(systemDir, MUTATIONS), ["src/clamp.ts"]);
  assert.equal(readFileSync(join(systemDir, "src", "clamp.ts"), "utf8"), CLAMP);
});

test("Ctrl-C during a mutation's test run restores the file and stops the tests", async (t) => {
  const { root, systemDir } = await fixture(t);
  const hanging = [{ ...MUTATIONS[0], tests: ["test/hang.test.ts"] }];
  writeFileSync(join(systemDir, "test", "mutations.json"), JSON.stringify(hanging));
  const runner = await spawnChild(new URL("../src/mutation-main.ts", import.meta.url), {
    args: ["demo", "--no-baseline"],
    env: { ...process.env, CASEBOOK_ROOT: root },
    ready: false,
    echoStderr: false,
    test: t,
  });
  const source = join(systemDir, "src", "clamp.ts");
  // The runner writes the copy of the original first, then the mutated file: wait for both
  // (reading the source right after the copy appears raced the second write in CI).
  await eventually(
    () => existsSync(`${source}.mutation-original`) && readFileSync(source, "utf8") !== CLAMP,
    { what: "the mutation is applied", timeoutMs: 60_000 },
  );
  assert.notEqual(readFileSync(source, "utf8"), CLAMP);
  const testProcesses = await eventually(
    () => (descendants(runner.pid).length > 0 ? descendants(runner.pid) : undefined),
    {
      what: "node --test runs the hanging test",
      timeoutMs: 60_000,
    },
  );
  runner.process.kill("SIGINT");
  const exit = await runner.exited;
  assert.equal(exit.code, 130);
  assert.equal(readFileSync(source, "utf8"), CLAMP);
  assert.equal(existsSync(`${source}.mutation-original`), false);
  await eventually(() => testProcesses.every((pid) => !alive(pid)), {
    what: "the test processes exit",
    timeoutMs: 30_000,
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test("an empty list (a new system's) is valid: nothing to run, a header-only report, nothing survived", async (t) => {
  const { root, systemDir } = await fixture(t);
  const mutations = parseMutationList("[]", systemDir);
  assert.deepEqual(mutations, []);
  await checkBaseline(systemDir, mutations, options(root));
  const results = await checkMutations(systemDir, mutations, options(root));
  assert.equal(
    mutationReport(results),
    "| mutation | claim | change | caught? | failing test |\n|---|---|---|---|---|\n",
  );
  assert.equal(allCaught(results), true);
});
