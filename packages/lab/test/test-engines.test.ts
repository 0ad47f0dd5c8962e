import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { contractSuite } from "../src/contract-suite.ts";
import { requireNats } from "../src/stream-backends.ts";
import {
  assertEngineAllowed,
  CLOSED_PASS_SKIP,
  closedEnginePass,
  engineFree,
  requirePostgres,
  requireRedis,
  suiteEngine,
  tcpReachable,
  uniqueName,
} from "../src/test-engines.ts";

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

test("an engineFree test runs with every engine probe forbidden (it skips in the closed-engine pass)", async (t) => {
  if (engineFree(t)) return;
  const noSkip = { skip: () => assert.fail("a forbidden probe throws, it does not skip") };
  await assert.rejects(requirePostgres(noSkip), /this test is marked engine-free .* probes PostgreSQL/);
  await assert.rejects(requireRedis(noSkip), /probes Redis/);
  await assert.rejects(requireNats(noSkip), /probes NATS/);
});

test("the engineFree mark ends with its test: the next test may probe", () => {
  assert.doesNotThrow(() => assertEngineAllowed("PostgreSQL"));
});

test("in the closed-engine pass engineFree skips its test and says so", () => {
  const script = `
    import { engineFree } from ${JSON.stringify(new URL("../src/test-engines.ts", import.meta.url).href)};
    const skips = [];
    process.stdout.write(JSON.stringify({ skipped: engineFree({ skip: (m) => skips.push(m) }), skips }));
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, CASEBOOK_CLOSED_ENGINE_PASS: "1" },
    encoding: "utf8",
  });
  assert.deepEqual(JSON.parse(out), { skipped: true, skips: [CLOSED_PASS_SKIP] });
});

/** What the embedded backend's case saw (checked by the test after the block). */
const embeddedProbes: string[] = [];

contractSuite(
  "an embedded backend",
  [{ name: "twin", embedded: true, open: async () => ({ subject: "twin", close: async () => {} }) }],
  (it) => {
    it("cannot probe an engine", async () => {
      await assert.rejects(requireRedis({ skip: () => {} }), (error: Error) => {
        embeddedProbes.push(error.message);
        return true;
      });
    });
  },
);

test("an embedded contract-suite backend forbids probes in its cases (its block skips in the closed-engine pass)", () => {
  assert.deepEqual(
    embeddedProbes,
    closedEnginePass
      ? []
      : [
          `the "twin" backend of an embedded backend is marked engine-free (skipped in CI's closed-engine pass) but probes Redis`,
        ],
  );
});
