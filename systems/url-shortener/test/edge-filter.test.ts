/**
 * US-16's filter in front of the edge: the nginx edge rate-limits each client address
 * (`limit_req`, src/edge/nginx-edge-config.ts) and answers 429 past the burst — before the
 * origin (here: none at all, so every request that got through is a 502).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { edgeHttpBlock, edgeMainDirectives } from "../src/edge/nginx-edge-config.ts";
import { EDGE_TOKEN } from "./edge-fixture.ts";

test("US-16 a filter in front of the edge: past its burst a client gets 429 from the edge, and nothing reaches the origin", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-edge-filter-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const deadOrigin = `127.0.0.1:${await freePort()}`;
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({
      main: edgeMainDirectives(),
      http: (port, nginxDir) =>
        edgeHttpBlock({
          port,
          dir: nginxDir,
          origin: deadOrigin,
          domains: ["s.example"],
          token: EDGE_TOKEN,
          accessLog: join(dir, "clicks.log"),
          perClient: { ratePerS: 1, burst: 5 },
        }),
      readyPath: "/healthz",
    }),
  );
  if (!nginx) return;
  t.after(() => nginx.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${nginx.url}/abc1234`, { redirect: "manual" });
    await res.body?.cancel();
    statuses.push(res.status);
  }
  const refused = statuses.filter((s) => s === 429).length;
  const through = statuses.filter((s) => s === 502).length;
  assert.equal(refused + through, 20, statuses.join(","));
  assert.ok(
    through <= 7,
    `at most the burst (5) and the rate's own (~1/s) got through: ${statuses.join(",")}`,
  );
  assert.ok(refused >= 13, statuses.join(","));
});
