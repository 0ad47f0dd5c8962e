import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { cliErrors } from "../src/cli-errors.ts";
import { discoverSystems, findPortCollisions } from "../src/discover-systems.ts";
import { makeFixtureRoot, removeFixtureRoot } from "./fixtures.ts";

test("systems are found in name order; folders without a package.json are passed over", (t) => {
  const root = makeFixtureRoot([{ name: "webhooks" }, { name: "cache" }]);
  t.after(() => removeFixtureRoot(root));
  mkdirSync(join(root, "systems", "half-started"));
  mkdirSync(join(root, "systems", ".hidden"));
  const systems = discoverSystems(root);
  assert.deepEqual(
    systems.map((s) => [s.name, s.file, s.dir]),
    [
      ["cache", "systems/cache/package.json", join(root, "systems", "cache")],
      ["webhooks", "systems/webhooks/package.json", join(root, "systems", "webhooks")],
    ],
  );
});

test("a repository without systems/ has no systems", (t) => {
  const root = makeFixtureRoot([]);
  t.after(() => removeFixtureRoot(root));
  assert.deepEqual(discoverSystems(join(root, "systems")), []);
});

test("invalid manifests throw CLI_MANIFEST_INVALID carrying every problem", (t) => {
  const root = makeFixtureRoot([
    { name: "a", manifest: { port: 1 } },
    { name: "b", manifest: { status: "?" } },
  ]);
  t.after(() => removeFixtureRoot(root));
  assert.throws(
    () => discoverSystems(root),
    (error) => {
      assert.ok(cliErrors.is(error, "CLI_MANIFEST_INVALID"));
      assert.equal((error.fields.problems as string[]).length, 2);
      return true;
    },
  );
});

test("port collisions list every port claimed twice with its claimants", () => {
  assert.deepEqual(
    findPortCollisions([
      { name: "c", port: 8102 },
      { name: "b", port: 8101 },
      { name: "a", port: 8102 },
      { name: "d", port: 8101 },
      { name: "e", port: 8103 },
    ]),
    [
      { port: 8101, names: ["b", "d"] },
      { port: 8102, names: ["a", "c"] },
    ],
  );
  assert.deepEqual(findPortCollisions([]), []);
});
