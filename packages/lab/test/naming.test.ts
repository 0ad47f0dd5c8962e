/**
 * One naming order for bounds and defaults (issue 13): `MAX_BATCH`, `MIN_SECRET_BYTES`,
 * `DEFAULT_LEASE_MS`, `DEFAULT_MAX_QUEUES` — the order of `Number.MAX_SAFE_INTEGER`, and
 * the order most of the code already used. Checked on every constant declared in TypeScript
 * under `systems/` and `packages/`, so a new `BATCH_MAX` fails here with its file and line.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const skipped = new Set(["node_modules", "dist", ".casebook-data"]);

function* typescriptFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skipped.has(entry.name) || entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(path);
    else if (/\.tsx?$/.test(entry.name)) yield path;
  }
}

/** `const BATCH_MAX =`, `const QUEUES_MAX_DEFAULT:` — a bound or default named suffix-first. */
const suffixFirst = /\bconst\s+([A-Z][A-Z0-9_]*_(?:MAX|MIN|DEFAULT))\b/g;

test("bounds and defaults are named MAX_X / MIN_X / DEFAULT_X, never X_MAX (issue 13)", () => {
  const found: string[] = [];
  for (const top of ["systems", "packages"]) {
    for (const file of typescriptFiles(join(root, top))) {
      if (file === fileURLToPath(import.meta.url)) continue; // its own examples below
      const lines = readFileSync(file, "utf8").split("\n");
      lines.forEach((line, i) => {
        for (const m of line.matchAll(suffixFirst)) found.push(`${relative(root, file)}:${i + 1} ${m[1]}`);
      });
    }
  }
  assert.deepEqual(found, [], `rename these to MAX_X / MIN_X / DEFAULT_X:\n${found.join("\n")}`);
});

test("the naming check catches a suffix-first constant and passes a prefix-first one", () => {
  const hits = (text: string): string[] => [...text.matchAll(suffixFirst)].map((m) => m[1] ?? "");
  assert.deepEqual(hits("export const BATCH_MAX = 10;\nconst QUEUES_MAX_DEFAULT: number = 3;"), [
    "BATCH_MAX",
    "QUEUES_MAX_DEFAULT",
  ]);
  assert.deepEqual(hits("export const MAX_BATCH = 10;\nconst DEFAULT_MAX_QUEUES = 3;"), []);
});
