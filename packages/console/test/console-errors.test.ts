/**
 * The console's error registry, walked code by code through the service's HTTP layer
 * (problem+json with the code and status), and the front end's two refusals: not built yet
 * (503 saying how to build) and a path outside the built files (404).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { consoleErrors } from "../src/console-errors.ts";
import { registerStaticAssets } from "../src/static-assets.ts";

test("every console error code answers as problem+json with its status and a message saying what to do", async () => {
  const service = createService({
    name: "console",
    version: "0",
    log: { level: "silent" },
    errors: [consoleErrors],
  });
  const codes = Object.keys(consoleErrors.specs) as (keyof typeof consoleErrors.specs)[];
  service.app.get<{ Params: { code: string } }>("/raise/:code", async (request) => {
    throw consoleErrors.create(request.params.code as (typeof codes)[number]);
  });
  for (const code of codes) {
    const res = await service.app.inject({ url: `/raise/${code}` });
    assert.equal(res.statusCode, consoleErrors.specs[code].status, code);
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    assert.equal(res.json().code, code);
    assert.ok(consoleErrors.specs[code].message.length > 30, `${code} says what to do`);
  }
  await service.close();
});

test("before the first build /app/ answers 503 saying how to build; a path outside the build is 404", async () => {
  const empty = mkdtempSync(join(tmpdir(), "casebook-console-dist-"));
  const service = createService({
    name: "console",
    version: "0",
    log: { level: "silent" },
    errors: [consoleErrors],
  });
  registerStaticAssets(service.app, { dir: empty });
  try {
    const page = await service.app.inject({ url: "/app/" });
    assert.equal(page.statusCode, 503);
    assert.equal(page.json().code, "CONSOLE_NOT_BUILT");
    assert.match(page.json().detail, /npm start/);
    assert.equal((await service.app.inject({ url: "/app" })).headers.location, "app/");
    const outside = await service.app.inject({ url: "/app/../../etc/passwd" });
    assert.equal(outside.statusCode, 404);
  } finally {
    await service.close();
    rmSync(empty, { recursive: true, force: true });
  }
});
