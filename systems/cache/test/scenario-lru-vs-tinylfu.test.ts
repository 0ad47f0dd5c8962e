/**
 * The console's eviction scenario, run over the node's HTTP sidecar to its result: the same zipf
 * trace through two private keyspaces, allkeys-lru and allkeys-w-tinylfu; the points grow as it
 * runs, and the node's own keyspace is untouched.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("CA-24 the console's scenario: one zipf trace through private allkeys-lru and allkeys-w-tinylfu keyspaces — W-TinyLFU's hit ratio is the higher, plotted as the trace advances", async (t) => {
  const node = await main({ CACHE_PORT: "0", PORT: "0", LOG_LEVEL: "silent" });
  t.after(() => node.close());
  const { scenarios: listed } = (await (await fetch(`${node.url}/v1/scenarios`)).json()) as {
    scenarios: Array<{ id: string }>;
  };
  assert.deepEqual(
    listed.map((s) => s.id),
    ["lru-vs-tinylfu", "primary-killed"],
  );
  let sawPartial = false;
  const { run, secondStart } = await runScenario(node.url, "lru-vs-tinylfu", {
    probeSecondStart: true,
    onRunning: (r) => {
      if (r.points.length > 0 && r.progress < 1) sawPartial = true;
    },
  });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  t.diagnostic(String(run.result));
  assert.ok(sawPartial, "points arrived while the run was running");
  const series = (name: string) => run!.points.filter((p) => p.series === name);
  const lru = series("allkeys-lru");
  const tiny = series("allkeys-w-tinylfu");
  assert.equal(lru.length, 40);
  assert.equal(tiny.length, 40);
  assert.equal(lru.at(-1)!.x, 200, "the whole trace, in thousands of requests");
  const m = /allkeys-lru hit ([\d.]+)%, allkeys-w-tinylfu ([\d.]+)%/.exec(String(run.result));
  assert.ok(m, String(run.result));
  assert.equal(Number(m[1]), lru.at(-1)!.y, "the sentence gives the plotted final ratio");
  assert.equal(Number(m[2]), tiny.at(-1)!.y);
  assert.ok(Number(m[2]) > Number(m[1]) + 3, `W-TinyLFU ${m[2]}% vs LRU ${m[1]}%`);
  assert.match(String(run.result), /holding 1,000 keys \(1000 and 1000 at the end\)/, "both at maxmemory");
  assert.equal(node.server.keyspace.size, 0, "the node's own keyspace is untouched");
});
