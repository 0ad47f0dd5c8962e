import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { cliErrors } from "../src/cli-errors.ts";
import { findRepoRoot } from "../src/repo-root.ts";
import { makeFixtureRoot, removeFixtureRoot } from "./fixtures.ts";

test("the root is the nearest package.json with workspaces above the start directory", (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  const deep = join(root, "packages", "cli", "src");
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(root, "packages", "cli", "package.json"), JSON.stringify({ name: "@casebook/cli" }));
  writeFileSync(join(root, "packages", "package.json"), "{ broken");
  assert.equal(findRepoRoot(deep, {}), root);
});

test("this repository's CLI finds this repository", () => {
  assert.equal(
    findRepoRoot(join(import.meta.dirname, "..", "src"), {}),
    join(import.meta.dirname, "..", "..", ".."),
  );
});

test("CASEBOOK_ROOT overrides the search and must be a directory", (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  assert.equal(findRepoRoot("/", { CASEBOOK_ROOT: root }), root);
  assert.throws(
    () => findRepoRoot("/", { CASEBOOK_ROOT: join(root, "package.json") }),
    (error) => cliErrors.is(error, "CLI_ROOT_NOT_FOUND"),
  );
  assert.throws(
    () => findRepoRoot("/", {}),
    (error) => cliErrors.is(error, "CLI_ROOT_NOT_FOUND"),
  );
});
