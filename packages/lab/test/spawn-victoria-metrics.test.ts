import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually } from "../src/eventually.ts";
import { spawnOrSkip } from "../src/server-engine.ts";
import { spawnVictoriaMetrics } from "../src/spawn-victoria-metrics.ts";

test("spawnVictoriaMetrics imports a sample and answers a query for it, then stops", async (t) => {
  const vm = await spawnOrSkip(t, () => spawnVictoriaMetrics({ args: ["-search.latencyOffset=0s"] }));
  if (!vm) return;
  t.after(() => vm.stop());
  const imported = await fetch(`${vm.url}/api/v1/import/prometheus`, {
    method: "POST",
    body: 'casebook_lab_test{job="lab"} 42\n',
  });
  assert.equal(imported.status, 204);
  await fetch(`${vm.url}/internal/force_flush`);
  const value = await eventually(
    async () => {
      const answer = (await (await fetch(`${vm.url}/api/v1/query?query=casebook_lab_test`)).json()) as {
        data: { result: Array<{ value: [number, string] }> };
      };
      return answer.data.result[0]?.value[1];
    },
    { what: "the imported sample to be queryable", timeoutMs: 10_000, intervalMs: 100 },
  );
  assert.equal(value, "42");
  await vm.stop();
});
