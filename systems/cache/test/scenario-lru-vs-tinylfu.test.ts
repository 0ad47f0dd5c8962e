/**
 * The console's eviction scenario, run over the node's HTTP sidecar to its result: the same zipf
 * trace through two private keyspaces, allkeys-lru and allkeys-w-tinylfu; the points grow as it
 * runs, and the node's own keyspace is untouched.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { ScenarioRun } from "@casebook/infra/http/scenario-runs";
import { main } from "../src/main.ts";

/** Bound on polling the run: its own bound (60 s) plus slack on a loaded machine. */
const MAX_POLLS = 1_400;

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
  const base = `${node.url}/v1/scenarios/lru-vs-tinylfu/runs`;
  const start = await fetch(base, { method: "POST" });
  assert.equal(start.status, 202);
  const { runId } = (await start.json()) as { runId: string };
  assert.equal((await fetch(base, { method: "POST" })).status, 409, "one run at a time");
  let run: ScenarioRun | undefined;
  let sawPartial = false;
  for (let i = 0; i < MAX_POLLS; i++) {
    run = (await (await fetch(`${base}/${runId}`)).json()) as ScenarioRun;
    if (run.state !== "running") break;
    if (run.points.length > 0 && run.progress < 1) sawPartial = true;
    await sleep(50);
  }
  assert.equal(run?.state, "done", JSON.stringify(run?.error));
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
