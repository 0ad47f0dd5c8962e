/**
 * Every backticked path in every README (the top one, each system's, each package's) names a
 * file or folder that exists: a design table is a map, and a map that names a moved file
 * sends the reader nowhere. One test per README.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { brokenReadmePaths, listReadmes, pathToken } from "../src/readme-paths.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const broken = brokenReadmePaths(root);

for (const readme of listReadmes(root)) {
  test(`${readme}: every backticked path resolves`, () => {
    const mine = broken.filter((b) => b.readme === readme).map((b) => `line ${b.line}: ${b.path}`);
    assert.deepEqual(mine, [], `${readme} names paths that do not exist:\n${mine.join("\n")}`);
  });
}

test("what counts as a path in a README", () => {
  const paths = [
    "src/store/fan-out.ts",
    "src/domain/",
    "tenant-claimer.ts",
    "http/outbound.ts",
    "@casebook/kit/api-key",
    "007_outbox_lease_vocabulary.sql",
    "test/claims.test.ts:12",
  ];
  assert.deepEqual(
    paths.map((p) => pathToken(p)),
    [...paths.slice(0, 6), "test/claims.test.ts"],
  );
  const prose = [
    "src/api/*",
    "001…004_*.sql",
    "…/outbox-relay",
    "../shared/claims/cache.md",
    "shared/claims/cache.md",
    "redis://127.0.0.1:7000",
    "/v1/check",
    "POST /v1/events",
    ".lua",
    "-n.lua",
    "NNN_name.sql",
    "application/problem+json",
    "maxBatch",
  ];
  assert.deepEqual(
    prose.map((p) => pathToken(p)),
    prose.map(() => null),
  );
});
