/**
 * The console's fairness scenario, run over the live API to its result: a private world (in-memory
 * PGlite, four tenants, relay, a worker of 4 slots, a receiver taking 1 s) where three quiet tenants
 * trickle and one floods far above the worker's capacity. The quiet tenants' p99 stays bounded
 * while the noisy tenant is served only its share, its backlog left waiting.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("WH-21 the console's scenario: one noisy tenant floods beside three quiet ones — the quiet tenants' p99 stays bounded, the noisy one gets its share and waits", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-wh-noisy-"));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    WEBHOOKS_WORKERS: "false",
  });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  let sawPartial = false;
  const { run } = await runScenario(running.url, "noisy-tenant", {
    onRunning: (r) => {
      if (r.points.length > 0) sawPartial = true;
    },
  });
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  assert.ok(sawPartial, "points arrived while the run was running");
  const m =
    /p50\/p99 commit→2xx: (\d+)\/(\d+) ms alone, (\d+)\/(\d+) ms beside the flood \((\d+) of their (\d+) events.*the noisy tenant sent (\d+) .*was served (\d+) .*?(\d+) left waiting.*global FIFO would have put the next quiet event \(~(\d+) s/.exec(
      result,
    );
  assert.ok(m, result);
  const [, , p99Alone, , p99Flood, quietServed, quietSent, noisySent, noisyServed, waiting, fifoWaitS] =
    m.map(Number) as number[];
  // The run's seconds (one point per series each second) and the quiet tenants' send rate.
  const runS = Math.max(...run.points.map((p) => p.x));
  const quietPerS = quietSent! / runS;
  // The quiet events sent in the run's last p99 + 1 s may still be in flight when it ends (a 1 s
  // receiver; an attempt is read back once recorded): the bound follows the measured tail, so a
  // slow host that stretches the p99 (bounded below) does not also fail this count.
  const inFlightAtEnd = Math.max(6, Math.ceil(quietPerS * ((p99Flood! + 1_000) / 1_000)) + 1);
  assert.ok(
    quietServed! >= quietSent! - inFlightAtEnd,
    `quiet tenants served (${quietServed} of ${quietSent}; up to ${inFlightAtEnd} may be in flight at the end)`,
  );
  // The p99 of ~7 quiet samples alone and ~22 beside the flood is each set's max, and the
  // scenario's whole world (PGlite, relay, worker, receiver) shares this process's event loop
  // with the flood's ingest: on a loaded 2-core CI host one stall of 1–2 s lands whole on a
  // single quiet delivery. Hence 2 × alone + 2.5 s (≈ 4.7 s at a 1.1 s p99 alone); fairness
  // lost would show as seconds more per second of flood, the quiet events queued behind it.
  assert.ok(
    p99Flood! <= 2 * p99Alone! + 2_500,
    `the quiet tenants' p99 beside the flood (${p99Flood} ms) stays within 2× + 2.5 s of alone (${p99Alone} ms)`,
  );
  // The run's own counterfactual: a global FIFO would have put the next quiet event behind the
  // whole waiting flood (waiting / deliveries per second: ~37 s in a typical run, over 10 s
  // whenever the flood asserts below hold). Fair claiming keeps the quiet p99 under half of it.
  assert.ok(
    p99Flood! < (fifoWaitS! * 1_000) / 2,
    `the quiet tenants' p99 beside the flood (${p99Flood} ms) is under half a FIFO's wait (~${fifoWaitS} s)`,
  );
  assert.ok(noisySent! >= 100, `the noisy tenant flooded (${noisySent})`);
  assert.ok(noisyServed! > 0, "the noisy tenant was served too (work-conserving)");
  assert.ok(
    waiting! > noisySent! / 2,
    `most of the flood still waits (${waiting} of ${noisySent}): a FIFO would have served it before the quiet tenants`,
  );
  // The noisy tenant never held more than its 3 of 4 slots: at a 1 s receiver, ≤ 3 deliveries a second (+1 for a boundary).
  const noisyPerS = run.points.filter((p) => p.series === "noisy: deliveries/s").map((p) => p.y);
  assert.ok(Math.max(...noisyPerS) <= 4, `noisy deliveries/s ${noisyPerS}`);
  assert.ok(run.points.some((p) => p.series === "quiet tenants' p99 latency (ms)"));
});
