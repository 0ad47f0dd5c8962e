/**
 * The console's edge scenario run to its result over HTTP (src/scenarios/edge-on-off-scenario.ts):
 * a private nginx and a private origin, many clicks on a few codes with the edge on, then off.
 * Skips (fails in CI with CASEBOOK_REQUIRE_ENGINES=1) when nginx is not installed.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { edgeMainDirectives } from "../src/edge/nginx-edge-config.ts";
import { main } from "../src/main.ts";

/** The scenario's shape (its defaults): 4 codes, max-age 2 s. */
const CODES = 4;
const MAX_AGE_S = 2;

test("US-09 US-15 the console's edge-on-off scenario: through the edge about one origin request per code per max-age window, without it one per click; every click counted either way", async (t) => {
  // nginx with the purge module present? (the scenario itself never installs it)
  const probe = await spawnOrSkip(t, () =>
    spawnNginx({
      main: edgeMainDirectives(),
      http: (port) => `server { listen 127.0.0.1:${port}; location / { return 204; } }`,
    }),
  );
  if (!probe) return;
  await probe.stop();
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-scenario-"));
  const running = await main({ PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dir });
  t.after(async () => {
    await running.close();
    await rm(dir, { recursive: true, force: true });
  });
  const list = (await (await fetch(`${running.url}/v1/scenarios`)).json()) as { scenarios: { id: string }[] };
  assert.ok(list.scenarios.some((s) => s.id === "edge-on-off"));
  const { run, secondStart } = await runScenario(running.url, "edge-on-off", { probeSecondStart: true });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const on =
    /With the edge: (\d+) clicks on (\d+) codes in ([\d.]+) s reached the origin (\d+) times — ([\d.]+) origin requests per code per (\d+) s max-age window; (\d+) of (\d+) clicks counted/.exec(
      result,
    );
  const off =
    /Without it: (\d+) clicks in ([\d.]+) s, (\d+) origin requests; (\d+) of (\d+) clicks counted/.exec(
      result,
    );
  assert.ok(on && off, result);
  const [onClicks, codes, onSeconds, onOrigin] = [Number(on[1]), Number(on[2]), Number(on[3]), Number(on[4])];
  assert.equal(codes, CODES);
  assert.equal(Number(on[6]), MAX_AGE_S);
  // Many clicks per code per window, or the edge's effect would not show.
  assert.ok(onClicks >= CODES * 20, `clicks through the edge: ${onClicks}`);
  // One fill per code per window: at most one per started window (the first at the first click),
  // at least the first fill of each code.
  const windows = Math.ceil(onSeconds / MAX_AGE_S);
  assert.ok(onOrigin >= CODES, `each code filled once at least: ${onOrigin}`);
  assert.ok(
    onOrigin <= CODES * (windows + 1),
    `origin requests ${onOrigin} ≤ ${CODES} codes × ${windows + 1} windows`,
  );
  assert.ok(onOrigin < onClicks / 5, "the edge answered most clicks");
  assert.equal(Number(on[7]), onClicks, "every click through the edge counted, from its log");
  // Without the edge every click is an origin request, recorded by the origin itself.
  const offClicks = Number(off[1]);
  assert.ok(offClicks > 0);
  assert.equal(Number(off[3]), offClicks, "without the edge, one origin request per click");
  assert.equal(Number(off[4]), offClicks, "every click straight at the origin counted");
  assert.match(result, / 0 clicks failed\./);
  // The plot: both lines of both phases.
  const series = new Set(run.points.map((p) => p.series));
  for (const name of [
    "clicks/s, edge on",
    "origin requests/s, edge on",
    "clicks/s, edge off",
    "origin requests/s, edge off",
  ])
    assert.ok(series.has(name), name);
});
