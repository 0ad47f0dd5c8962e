/**
 * MT-17's durability under a real crash: a child process appending batches to the TSDB is
 * killed with SIGKILL while writing; on reopen every batch it had acknowledged is there
 * (fsync before ack), nothing is doubled, at most the one batch in flight is missing or whole,
 * and a second writer carries on from there.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { spawnChild } from "@casebook/lab/spawn-child";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { Tsdb } from "../src/store/tsdb.ts";

const CHILD = new URL("./store-wal-kill-child.ts", import.meta.url);
const limits = { maxSeries: 1_000, maxSeriesPerMetric: 1_000 };

/** Kills the writer after it acknowledged `acks` batches; resolves the last acknowledgement read by then. */
async function killAfterAcks(dir: string, acks: number, t: TestContext): Promise<number> {
  const child = await spawnChild(CHILD, { args: [dir], ready: "ready", test: t });
  child.process.stdin.end();
  let last = -1;
  for (let n = 0; n < acks; n++) last = Number((await child.nextLine(60_000)).split(" ")[1]);
  await child.kill("SIGKILL");
  return last;
}

test("MT-17 a writer killed with SIGKILL mid-stream loses no acknowledged batch and doubles none", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "metrics-wal-kill-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const round of [1, 2]) {
    const lastAcked = await killAfterAcks(dir, 40, t);
    const db = await Tsdb.open({ dir, blockRangeMs: 7_200_000, limits });
    const series = db.select([labelMatcher("=", "__name__", "written")], 0, Number.MAX_SAFE_INTEGER);
    assert.equal(series.length, 20, `round ${round}`);
    for (const s of series) {
      const values = Array.from(s.values);
      // Consecutive, no gap and no repeat: 0 … n, n at least the last acknowledgement read (the
      // child may have acknowledged a few more, and one more may have been in flight, whole or absent).
      assert.deepEqual(
        values,
        values.map((_, i) => i),
        `round ${round}: every batch once, in order`,
      );
      assert.ok(values.length - 1 >= lastAcked, `round ${round}: acked ${lastAcked}, found ${values.length}`);
    }
    // Every series holds the same batches: a batch is never half there.
    assert.equal(new Set(series.map((s) => s.values.length)).size, 1, "batches are whole");
    await db.close();
  }
});
