import assert from "node:assert/strict";
import { test } from "node:test";
import { parseManifest } from "../src/manifest.ts";

const file = "systems/rate-limiter/package.json";
const pkg = (casebook: unknown, name = "@casebook/rate-limiter") => ({ name, casebook });

test("a minimal manifest gets the default entries, no env and both engines", () => {
  const { manifest, problems } = parseManifest(
    pkg({ title: "distributed rate limiter", status: "working", port: 8101 }),
    file,
    "rate-limiter",
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(manifest, {
    title: "distributed rate limiter",
    status: "working",
    main: "src/main.ts",
    bench: "bench/main.ts",
    port: 8101,
    env: {},
    engines: ["sql", "redis"],
    tools: {},
    calls: [],
  });
});

test("a full manifest is taken as written", () => {
  const { manifest, problems } = parseManifest(
    pkg({
      title: "cache",
      status: "in progress",
      main: "src/server.ts",
      bench: "bench/run.mjs",
      port: 8199,
      env: { CACHE_WIRE_PORT: "7000" },
      engines: ["redis"],
      tools: { reconcile: "src/workers/reconcile-cli.ts" },
    }),
    file,
    "rate-limiter",
  );
  assert.deepEqual(problems, []);
  assert.equal(manifest?.main, "src/server.ts");
  assert.deepEqual(manifest?.env, { CACHE_WIRE_PORT: "7000" });
  assert.deepEqual(manifest?.engines, ["redis"]);
  assert.deepEqual(manifest?.tools, { reconcile: "src/workers/reconcile-cli.ts" });
});

test("every problem is reported at once, each naming the file and the field", () => {
  const { manifest, problems } = parseManifest(
    pkg(
      {
        title: " ",
        status: "done",
        port: 80,
        main: "../other/src/main.ts",
        bench: "/abs/bench.ts",
        env: { lower: "x", PORT: "1", N: 3 },
        engines: ["sql", "kafka"],
        tools: { Reconcile: "src/r.ts", sweep: "../x.ts", fix: 3 },
        prot: 8101,
      },
      "@casebook/other",
    ),
    file,
    "rate-limiter",
  );
  assert.equal(manifest, undefined);
  const fields = problems.map((p) => /field "([^"]+)"/.exec(p)?.[1]);
  assert.deepEqual(fields.sort(), [
    "casebook.bench",
    "casebook.engines",
    "casebook.env.N",
    "casebook.env.PORT",
    "casebook.env.lower",
    "casebook.main",
    "casebook.port",
    "casebook.prot",
    "casebook.status",
    "casebook.title",
    "casebook.tools.Reconcile",
    "casebook.tools.fix",
    "casebook.tools.sweep",
    "name",
  ]);
  for (const problem of problems) assert.ok(problem.startsWith(`${file}: field "`), problem);
  assert.ok(
    problems.some((p) =>
      p.includes('must be "@casebook/rate-limiter" (the folder\'s name), got "@casebook/other"'),
    ),
  );
  assert.ok(problems.some((p) => p.includes("8100–8199")));
});

test("ports at the edges of the HTTP range are accepted, outside or fractional refused", () => {
  const at = (port: unknown) =>
    parseManifest(pkg({ title: "t", status: "planned", port }), file, "rate-limiter");
  assert.equal(at(8100).problems.length, 0);
  assert.equal(at(8199).problems.length, 0);
  for (const port of [8099, 8200, 8100.5, "8101", undefined])
    assert.equal(at(port).problems.length, 1, String(port));
});

test("a package.json without a casebook object is one clear problem", () => {
  assert.deepEqual(parseManifest({ name: "@casebook/rate-limiter" }, file, "rate-limiter").problems, [
    `${file}: field "casebook" must be an object like {"title": …, "status": …, "port": …}, got nothing`,
  ]);
  assert.deepEqual(parseManifest([], file, "rate-limiter").problems, [`${file}: is not a JSON object`]);
});
