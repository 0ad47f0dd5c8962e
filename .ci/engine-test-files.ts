/**
 * Prints the test files that can reach the real test engines, one per line, for CI's
 * quick pass with the engine URLs closed (.ci/run). The engine URLs are read in one
 * place, lab's test-engines.ts (PostgreSQL, Redis) and stream-backends.ts (NATS), and
 * sql-backends.ts opens PostgreSQL through the former; so a test can only touch an
 * engine by importing one of them, directly or through a test helper of its folder
 * (a system's store-backends.ts). This follows relative imports among the test folders'
 * files to a fixpoint and keeps the `.test.ts` files reached. A file that imports none of
 * them reads no engine URL, so it runs the same whether the engines are up or not: the
 * main suite covers it.
 *
 * Usage: node .ci/engine-test-files.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const ENGINE_MODULE = /(@casebook\/lab\/|\.\.\/src\/)(test-engines|sql-backends|stream-backends)(\.ts)?["']/;
const RELATIVE_IMPORT = /from\s+["'](\.{1,2}\/[^"']+\.ts)["']/g;

function testFolders(): string[] {
  const folders: string[] = [];
  for (const group of ["packages", "systems"]) {
    for (const name of readdirSync(join(root, group))) folders.push(join(root, group, name, "test"));
  }
  return folders;
}

function tsFiles(dir: string): string[] {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

const files = testFolders().flatMap(tsFiles);
const sources = new Map(files.map((file) => [file, readFileSync(file, "utf8")]));
const reaches = new Set(files.filter((file) => ENGINE_MODULE.test(sources.get(file)!)));
for (let grew = true; grew; ) {
  grew = false;
  for (const file of files) {
    if (reaches.has(file)) continue;
    for (const [, target] of sources.get(file)!.matchAll(RELATIVE_IMPORT)) {
      if (reaches.has(resolve(dirname(file), target!))) {
        reaches.add(file);
        grew = true;
        break;
      }
    }
  }
}
const tests = [...reaches]
  .filter((file) => file.endsWith(".test.ts"))
  .map((file) => file.slice(root.length + 1));
process.stdout.write(
  tests
    .sort()
    .map((file) => `${file}\n`)
    .join(""),
);
