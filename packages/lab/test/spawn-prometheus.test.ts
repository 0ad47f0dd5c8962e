import assert from "node:assert/strict";
import { test } from "node:test";
import { spawnOrSkip } from "../src/server-engine.ts";
import { spawnPrometheus } from "../src/spawn-prometheus.ts";

test("spawnPrometheus answers on its own port with the remote-write receiver on, then stops", async (t) => {
  const prom = await spawnOrSkip(t, () => spawnPrometheus());
  if (!prom) return;
  t.after(() => prom.stop());
  assert.notEqual(prom.port, 9090);
  const flags = (await (await fetch(`${prom.url}/api/v1/status/flags`)).json()) as {
    data: Record<string, string>;
  };
  assert.equal(flags.data["web.enable-remote-write-receiver"], "true");
  assert.equal(flags.data["storage.tsdb.path"], `${prom.dir}/data`);
  // The receiver is there: an empty body is a 400 (bad snappy), not a 404.
  const write = await fetch(`${prom.url}/api/v1/write`, { method: "POST", body: "" });
  assert.equal(write.status, 400);
  const query = (await (await fetch(`${prom.url}/api/v1/query?query=vector(1)`)).json()) as {
    status: string;
  };
  assert.equal(query.status, "success");
  await prom.stop();
});

test("spawnPrometheus backfills OpenMetrics text with promtool before it starts: the samples answer queries", async (t) => {
  const at = Math.floor(Date.now() / 60_000) * 60 - 600;
  const backfill = `${[0, 15, 30].map((s) => `backfilled_total{job="a"} ${s / 15 + 1} ${at + s}`).join("\n")}\n# EOF\n`;
  const prom = await spawnOrSkip(t, () => spawnPrometheus({ backfill }));
  if (!prom) return;
  t.after(() => prom.stop());
  const answer = (await (
    await fetch(
      `${prom.url}/api/v1/query?query=${encodeURIComponent("count_over_time(backfilled_total[1m])")}&time=${at + 30}`,
    )
  ).json()) as { data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
  assert.deepEqual(answer.data.result, [{ metric: { job: "a" }, value: [at + 30, "3"] }]);
  // Bad input is promtool's error, named, before any server starts.
  await assert.rejects(
    spawnPrometheus({ backfill: "not openmetrics {\n# EOF\n" }),
    /promtool tsdb create-blocks-from openmetrics failed/,
  );
});
