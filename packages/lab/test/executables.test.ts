import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ensureExecutable, findExecutable, findPostgresBinDir } from "../src/executables.ts";

test("findExecutable finds programs on PATH and in sbin dirs, and nothing for a missing one", () => {
  assert.equal(findExecutable("sh")?.endsWith("/sh"), true);
  assert.equal(findExecutable("casebook-no-such-program"), undefined);
});

test("ensureExecutable names the Debian package when it may not install", async () => {
  await assert.rejects(
    ensureExecutable("casebook-no-such-program", { debianPackage: "casebook-nothing", install: false }),
    { code: "LAB_ENGINE_MISSING", message: /apt-get install -y casebook-nothing/ },
  );
});

test("findPostgresBinDir picks the newest major that has initdb and postgres", async () => {
  const root = await mkdtemp(join(tmpdir(), "casebook-pgroot-"));
  try {
    for (const major of ["9.6", "15", "16", "17"]) await mkdir(join(root, major, "bin"), { recursive: true });
    for (const major of ["9.6", "15", "16"]) {
      for (const program of ["initdb", "postgres"]) {
        await writeFile(join(root, major, "bin", program), "#!/bin/sh\n", { mode: 0o755 });
      }
    }
    // 17 has no programs (a client-only install): skipped.
    assert.equal(findPostgresBinDir(root), join(root, "16", "bin"));
    assert.equal(findPostgresBinDir(join(root, "missing")), undefined);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
