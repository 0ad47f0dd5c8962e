import assert from "node:assert/strict";
import { test } from "node:test";
import { labErrors } from "../src/lab-errors.ts";
import { spawnOrSkip, spawnServerEngine } from "../src/server-engine.ts";
import { enginesRequired } from "../src/test-engines.ts";

test("spawnOrSkip skips with the reason when the engine is missing, and rethrows anything else", async () => {
  const skipped: string[] = [];
  const t = { skip: (why?: string) => void skipped.push(why ?? "") };
  const missing = () =>
    spawnServerEngine(
      {
        name: "nothing",
        program: "casebook-no-such-server",
        debianPackage: "casebook-no-such-package",
        dirPrefix: "casebook-nothing-",
        args: () => [],
        answers: async () => false,
        url: (port) => `http://127.0.0.1:${port}`,
      },
      { install: false },
    );
  if (enginesRequired) {
    await assert.rejects(spawnOrSkip(t, missing), (error: unknown) =>
      labErrors.is(error, "LAB_ENGINE_MISSING"),
    );
  } else {
    assert.equal(await spawnOrSkip(t, missing), undefined);
    assert.match(
      skipped[0] ?? "",
      /casebook-no-such-server is not installed; install it with: apt-get install -y casebook-no-such-package/,
    );
  }
  await assert.rejects(
    spawnOrSkip(t, async () => {
      throw new Error("a bug, not a missing engine");
    }),
    /a bug/,
  );
});
