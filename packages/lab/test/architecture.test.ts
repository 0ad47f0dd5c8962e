/**
 * ARCHITECTURE.md rule 1, "Dependencies point down", checked on every import of every
 * `systems/<name>/src` and `packages/<name>/src` file: a domain that reaches into store, api,
 * workers or clients; a system's client library that reaches into its server; a system that
 * imports another system (other than `@casebook/<name>/client`); a package that imports a
 * system or a package above it; every import cycle (type-only imports included); and a package
 * that `src/` imports without its manifest's `dependencies` naming it (a devDependency is absent
 * from a production install; a hoisted one works only by accident). One test per workspace, so a
 * failure names the system it belongs to.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { checkLayering, readImportGraph, violationKey } from "../src/import-graph.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Violations not fixed yet, each the exact line the checker prints. Empty since issue 13
 * untangled the last ones; should one ever be needed, an entry the checker no longer finds
 * fails its workspace's test until it is removed here, so the list can only shrink.
 */
const notYetFixed: readonly string[] = [];

const graph = readImportGraph(root);
const found = checkLayering(graph).map(violationKey);
const owners = [...new Set(graph.workspaces.values())].sort();

for (const owner of owners) {
  test(`${owner} imports follow the layering rules (ARCHITECTURE.md rule 1)`, () => {
    const mine = (line: string): boolean => line.startsWith(`${owner} `);
    const unexpected = found.filter((v) => mine(v) && !notYetFixed.includes(v));
    const fixed = notYetFixed.filter((v) => mine(v) && !found.includes(v));
    assert.deepEqual(unexpected, [], `${owner} breaks the layering:\n${unexpected.join("\n")}`);
    assert.deepEqual(fixed, [], `fixed, so remove from notYetFixed:\n${fixed.join("\n")}`);
  });
}

test("every entry of notYetFixed names a workspace that exists", () => {
  const stray = notYetFixed.filter((v) => !owners.some((o) => v.startsWith(`${o} `)));
  assert.deepEqual(stray, []);
});

test("the checker catches each rule on a small tree", () => {
  const tree = mkdtempSync(join(tmpdir(), "casebook-architecture-"));
  const put = (path: string, text: string): void => {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), text);
  };
  const manifest = (name: string, ...dependencies: string[]): string =>
    JSON.stringify({ name, dependencies: Object.fromEntries(dependencies.map((d) => [d, "*"])) });
  try {
    put("packages/kit/package.json", manifest("@casebook/kit", "@casebook/infra"));
    put("packages/kit/src/clock.ts", 'import { x } from "@casebook/infra/sql";\n');
    put("packages/infra/package.json", manifest("@casebook/infra", "@casebook/a"));
    put("packages/infra/src/sql.ts", 'import { y } from "@casebook/a/main";\nexport const x = 1;\n');
    put("systems/a/package.json", manifest("@casebook/a", "ioredis"));
    put(
      "systems/a/src/main.ts",
      'import "./domain/d.ts";\nimport "ioredis";\nimport "node:fs";\nexport const y = 1;\n',
    );
    put("systems/a/src/client.ts", "export const c = 1;\n");
    put("systems/a/src/domain/d.ts", 'import type { S } from "../store/s.ts";\n');
    put("systems/a/src/store/s.ts", 'import { d } from "../domain/d.ts";\nexport type S = 1;\n');
    put("systems/a/src/client/k.ts", 'import { h } from "../api/h.ts";\n');
    put("systems/a/src/api/h.ts", '/** import { z } from "../nowhere.ts"; */\nexport const h = 1;\n');
    put("systems/b/package.json", manifest("@casebook/b", "@casebook/a"));
    put(
      "systems/b/src/store.ts",
      'import { Redis } from "ioredis";\nimport { z } from "@casebook/a/client";\n',
    );
    put("systems/b/src/main.ts", 'import { c } from "@casebook/a/client";\nimport("@casebook/a/main");\n');
    const lines = checkLayering(readImportGraph(tree)).map(violationKey);
    assert.deepEqual(lines, [
      "packages/infra package-imports-system: src/sql.ts -> systems/a/src/main.ts",
      "packages/kit package-imports-upward: src/clock.ts -> packages/infra/src/sql.ts",
      "systems/a client-imports-server: src/client/k.ts -> src/api/h.ts",
      "systems/a cycle: src/domain/d.ts <-> src/store/s.ts",
      "systems/a domain-imports-io: src/domain/d.ts -> src/store/s.ts",
      "systems/b system-imports-system: src/main.ts -> systems/a/src/main.ts",
      "systems/b undeclared-dependency: src/store.ts -> ioredis",
    ]);
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
});
