/**
 * The keys `casebook up` mints for wiring are kept in the data root: the same key for the same
 * purpose launch after launch, a file only its owner reads, and a broken file or a key of
 * another kind replaced rather than trusted.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { freshWiringKeys, keptWiringKeys } from "../src/wiring-keys.ts";

test("kept keys: one per purpose, the same from a second reader of the file, mode 0600", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "wiring-keys-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "data", "wiring-keys.json");
  const first = keptWiringKeys(file, randomBytes);
  const pay = first.keyFor("calls shop→bank", "sk");
  assert.ok(apiKeyScheme("sk").parse(pay));
  assert.equal(first.keyFor("calls shop→bank", "sk"), pay);
  assert.notEqual(first.keyFor("calls till→bank", "sk"), pay, "another purpose, another key");
  assert.equal(keptWiringKeys(file, randomBytes).keyFor("calls shop→bank", "sk"), pay, "the next launch");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(file, "utf8"))), [
    "calls shop→bank",
    "calls till→bank",
  ]);

  const other = keptWiringKeys(file, randomBytes).keyFor("calls shop→bank", "mtk");
  assert.ok(apiKeyScheme("mtk").parse(other), "the callee grants another kind now: a key of that kind");
  writeFileSync(file, "{ not json");
  assert.ok(apiKeyScheme("sk").parse(keptWiringKeys(file, randomBytes).keyFor("calls shop→bank", "sk")));
});

test("fresh keys: a new one at every call", () => {
  const keys = freshWiringKeys(randomBytes);
  assert.notEqual(keys.keyFor("scrapes m", "mtk"), keys.keyFor("scrapes m", "mtk"));
});
