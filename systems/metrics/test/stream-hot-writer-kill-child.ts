/**
 * Child of stream-hot-writer-kill.test.ts: a hot writer on the JetStream at argv[2], writing
 * into the TSDB directory argv[3], acks redelivered after 300 ms. Prints `ready`, then
 * `applied <seq>` after each message is appended (WAL fsynced) and before its ack; with
 * argv[4] = n it SIGKILLs itself right after the n-th append — between the append and the
 * ack, the worst place to die.
 */
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import { TenantTsdbs } from "../src/store/tenant-tsdbs.ts";
import { startHotWriter } from "../src/workers/hot-writer.ts";

const [url, dir, killAfter] = process.argv.slice(2) as [string, string, string | undefined];
const client = await openJetStream({ url, name: "hot-writer-kill-child", requestTimeoutMs: 5_000 });
const tsdbs = new TenantTsdbs({
  dir,
  blockRangeMs: 7_200_000,
  defaults: { maxSeries: 10_000, maxSeriesPerMetric: 10_000 },
});
let applied = 0;
const writer = await startHotWriter({
  client,
  tsdbs,
  tenantOf: async (id) => ({ id, maxSeries: undefined, maxSeriesPerMetric: undefined }),
  partitions: Number(process.env.PARTITIONS ?? 2),
  ackWaitMs: 300,
  expiresMs: 200,
  onApplied: ({ seq }) => {
    applied++;
    process.stdout.write(`applied ${seq}\n`);
    if (killAfter !== undefined && applied === Number(killAfter)) process.kill(process.pid, "SIGKILL");
  },
  onDropped: (event) => process.stdout.write(`dropped ${JSON.stringify(event)}\n`),
  onError: (error) => process.stderr.write(`hot writer: ${String(error)}\n`),
});
process.stdout.write("ready\n");
process.stdin.on("end", async () => {
  await writer.stop();
  await tsdbs.close();
  await client.close();
  process.exit(0);
});
process.stdin.resume();
