/**
 * The console's FS-16 scenario run to its result over HTTP (src/scenarios/arrival-curve-scenario.ts):
 * the same arrivals at two checkouts of 20/s at once, one behind a private waiting room.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

const CAPACITY_PER_S = 20;

test("FS-16 the console's scenario: the same arrivals with and without the waiting room — without it retries push checkout over capacity and clients give up; with it checkout never gets more than its capacity in any second, and no try times out", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-fs-fs16-"));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    DATABASE_URL: "",
    REDIS_URL: "",
  });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { run } = await runScenario(running.url, "waiting-room-on-off");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const series = (name: string) => run!.points.filter((p) => p.series === name).map((p) => p.y);
  const arrivals = series("arrivals/s");
  const without = series("checkout arrivals/s, without the room");
  const withRoom = series("checkout arrivals/s, with the room");
  assert.ok(
    arrivals.length >= 20 && without.length === arrivals.length && withRoom.length === arrivals.length,
  );
  // The same curve for both: a burst far above capacity (20× in its first second; a loaded
  // machine's late steps move some arrivals into the next second, never drop them).
  assert.ok(Math.max(...arrivals) >= 10 * CAPACITY_PER_S, `peak arrivals ${Math.max(...arrivals)}/s`);
  assert.match(
    result,
    /^(8[01]\d|82[0-2]) arrivals/,
    "every arrival of the curve (Σ 400·e^(−t/1.5 s), t < 10 s)",
  );
  // Without the room: checkout offered far more than it takes, retries on top of the arrivals.
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  assert.ok(Math.max(...without) > 10 * CAPACITY_PER_S, "checkout swamped without the room");
  assert.ok(sum(without) > sum(arrivals), "the retries are load too: more tries than arrivals");
  const m =
    /With the room: checkout offered up to (\d+)\/s, over capacity in (\d+) s, (\d+) tries timed out, (\d+) served \((\d+) held\)/.exec(
      result,
    );
  const w =
    /Without the room: checkout offered up to (\d+)\/s, over capacity in (\d+) s, (\d+) tries timed out, (\d+) clients gave up, (\d+) served \((\d+) held\)/.exec(
      result,
    );
  assert.ok(m && w, result);
  assert.ok(Number(w[2]) >= 3, "over capacity for seconds without the room");
  assert.ok(Number(w[4]) > 0, "clients gave up without the room");
  // With the room: never above capacity in any second, nobody timed out, and it served.
  assert.ok(
    Math.max(...withRoom) <= CAPACITY_PER_S,
    `with the room, at most ${CAPACITY_PER_S}/s: ${withRoom}`,
  );
  assert.equal(Number(m[2]), 0);
  assert.equal(Number(m[3]), 0, "no try behind the room timed out");
  assert.ok(Number(m[4]) > 0);
  // Every try let through reserved a real ticket.
  assert.equal(Number(m[5]), Number(m[4]));
  assert.equal(Number(w[6]), Number(w[5]));
});
