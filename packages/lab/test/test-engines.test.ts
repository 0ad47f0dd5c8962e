import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { suiteEngine, tcpReachable, uniqueName } from "../src/test-engines.ts";

/** What the suiteEngine blocks' hooks did, in order. */
const calls: string[] = [];

test("tcpReachable tells an open port from a closed one", async () => {
  const server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  assert.equal(await tcpReachable("127.0.0.1", port), true);
  await new Promise<void>((r) => server.close(() => r()));
  assert.equal(await tcpReachable("127.0.0.1", port), false);
});

test("uniqueName never repeats within a process", () => {
  const names = new Set(Array.from({ length: 1_000 }, () => uniqueName("t")));
  assert.equal(names.size, 1_000);
});

describe("suiteEngine with the engine down", () => {
  const engine = suiteEngine(async (t) => {
    t.skip("FakeDB not reachable at fake://127.0.0.1:1");
    return undefined;
  });
  engine.before(() => calls.push("before"));
  engine.after(() => calls.push("after"));

  test("a test is skipped with the probe's reason", (t) => {
    const skips: (string | undefined)[] = [];
    const url = engine.use({ skip: (message) => skips.push(message) });
    assert.equal(url, undefined);
    assert.deepEqual(skips, ["FakeDB not reachable at fake://127.0.0.1:1"]);
    t.skip("engine down, as arranged");
  });
});

describe("suiteEngine with the engine up", () => {
  const engine = suiteEngine(async () => "fake://127.0.0.1:9");
  engine.before((url) => calls.push(`before ${url}`));
  engine.after((url) => calls.push(`after ${url}`));

  test("hooks and tests see the URL", () => {
    assert.equal(engine.url, "fake://127.0.0.1:9");
    assert.equal(engine.use({ skip: () => assert.fail("not skipped") }), "fake://127.0.0.1:9");
  });
});

test("suiteEngine ran the hooks of the up engine only: a down engine's cleanup never touches it", () => {
  assert.deepEqual(calls, ["before fake://127.0.0.1:9", "after fake://127.0.0.1:9"]);
});
