/**
 * The console's start refuses what would be unsafe or unreadable, before anything opens:
 * listening beyond loopback without an admin token, and a CASEBOOK_CONSOLE_SYSTEMS that is
 * not the list `casebook up` passes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "@casebook/kit/config";
import { main } from "../src/main.ts";
import { parseStarted } from "../src/system-catalog.ts";

test("beyond loopback without CASEBOOK_CONSOLE_ADMIN_TOKEN the start fails, naming the setting", async () => {
  await assert.rejects(
    main({ PORT: "0", HOST: "0.0.0.0" }, { skipWebBuild: true }),
    (error: unknown) => error instanceof ConfigError && /CASEBOOK_CONSOLE_ADMIN_TOKEN/.test(error.message),
  );
});

test("CASEBOOK_CONSOLE_SYSTEMS must be casebook up's list of names and URLs", () => {
  assert.equal(parseStarted(undefined), undefined);
  assert.deepEqual(parseStarted('[{"name":"a","url":"http://127.0.0.1:8101"}]'), [
    { name: "a", url: "http://127.0.0.1:8101" },
  ]);
  for (const bad of ["{", '[{"name":"a"}]', '[{"name":"a","url":"ftp://x"}]']) {
    assert.throws(() => parseStarted(bad), { code: "CONSOLE_SYSTEMS_INVALID" });
  }
});
