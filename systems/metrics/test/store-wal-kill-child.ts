/**
 * Child of store-wal-kill.test.ts: opens the TSDB at argv[2] and appends batches as fast as
 * it can (20 series, one sample each, 15 s apart), printing `acked <i>` after each append
 * resolved (WAL fsynced). The parent kills it with SIGKILL mid-stream.
 */
import { labelsFromRecord } from "../src/domain/labels.ts";
import { Tsdb } from "../src/store/tsdb.ts";

const dir = process.argv[2]!;
const db = await Tsdb.open({
  dir,
  blockRangeMs: 7_200_000,
  limits: { maxSeries: 1_000, maxSeriesPerMetric: 1_000 },
});
const start = db.head.sampleCount / 20;
process.stdout.write("ready\n");
for (let i = start; i < start + 1_000_000; i++) {
  const batch = Array.from({ length: 20 }, (_, s) => ({
    labels: labelsFromRecord({ __name__: "written", series: String(s) }),
    samples: [{ t: 1_767_225_600_000 + i * 15_000, v: i }],
  }));
  const result = await db.append(batch);
  if (!result.ok) throw new Error(result.detail);
  process.stdout.write(`acked ${i}\n`);
}
