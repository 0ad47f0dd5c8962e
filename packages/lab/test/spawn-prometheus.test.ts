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
