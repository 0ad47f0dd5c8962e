/**
 * What a system declares for the console (`casebook.console` in its manifest): every problem
 * named by file and field, and the four working systems' declarations valid as committed.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { discoverSystems } from "@casebook/cli/discover-systems";
import { parseConsoleDeclaration } from "../src/console-declaration.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

test("a declaration with problems names each field at fault, all at once", () => {
  const result = parseConsoleDeclaration(
    {
      summary: "",
      ports: [{ name: "RESP", port: 70000 }],
      plots: [
        { title: "Hits", unit: "hits/s", series: [{ metric: "bad name", fn: "sum" }] },
        { title: "p99", unit: "ms", series: [{ metric: "lat", fn: "quantile", q: 2, by: "0x" }] },
      ],
      scenarios: [{ id: "Bad Id", title: "t", line: "" }],
    },
    "systems/x/package.json",
  );
  assert.equal(result.declaration, undefined);
  const fields = result.problems.map((p) => /field "([^"]+)"/.exec(p)![1]);
  assert.deepEqual(fields, [
    "casebook.console.summary",
    "casebook.console.ports[0]",
    "casebook.console.plots[0].series[0].metric",
    "casebook.console.plots[0].series[0].fn",
    "casebook.console.plots[1].series[0].q",
    "casebook.console.plots[1].series[0].by",
    "casebook.console.scenarios[0].id",
    "casebook.console.scenarios[0].line",
  ]);
  assert.ok(result.problems.every((p) => p.startsWith("systems/x/package.json: ")));
  assert.deepEqual(parseConsoleDeclaration(undefined, "f"), { problems: [] });
});

test("every system's console block is valid, and the systems that declare one show at least three plots", () => {
  const systems = discoverSystems(root);
  const problems = systems.flatMap((s) => parseConsoleDeclaration(s.manifest.console, s.file).problems);
  assert.deepEqual(problems, []);
  for (const name of [
    "rate-limiter",
    "webhooks",
    "cache",
    "payments",
    "feed",
    "flash-sale",
    "url-shortener",
    "metrics",
  ]) {
    const system = systems.find((s) => s.name === name)!;
    const { declaration } = parseConsoleDeclaration(system.manifest.console, system.file);
    assert.ok((declaration?.plots.length ?? 0) >= 3, `${name} declares its plots`);
  }
});

/** Every .ts file under `dir`, read. */
function sources(dir: string): string {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n");
}

test("every declared series reads a metric its system registers (its src, or the service base's HTTP histogram)", () => {
  const base = sources(join(root, "packages", "infra", "src", "http"));
  for (const system of discoverSystems(root)) {
    const { declaration } = parseConsoleDeclaration(system.manifest.console, system.file);
    if (declaration === undefined) continue;
    const own = sources(join(root, dirname(system.file), "src"));
    for (const plot of declaration.plots) {
      for (const series of plot.series) {
        // A histogram's `_count` / `_sum` series are its own name's.
        const name = series.metric.replace(/_(count|sum|bucket)$/, "");
        assert.ok(
          own.includes(`"${name}"`) || base.includes(`"${name}"`),
          `${system.name}: "${plot.title}" reads ${series.metric}, which nothing registers`,
        );
      }
    }
  }
});
