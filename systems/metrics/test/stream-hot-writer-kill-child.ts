/**
 * Child of stream-hot-writer-kill.test.ts: a hot writer on the JetStream at argv[2], writing
 * into the TSDB directory argv[3], acks redelivered after `ACK_WAIT_MS` (300), `BATCH` messages at most per
 * fetch (default the writer's). Prints `ready`, then `applied <seq>` for each message once its
 * batch is appended (WAL fsynced) and before its ack, `fetched <seqs>` before a batch is
 * applied and `durable <seqs>` once all of it is fsynced. With argv[4] = n it SIGKILLs itself
 * at the n-th `KILL_AT`: `applied` (default: right after the n-th message's append, between
 * the append and the ack), `durable` (after the n-th batch's fsync, before any of its acks),
 * `fetched` (the n-th batch taken from the stream, nothing of it applied) or `fresh` (the same,
 * counting only batches of first deliveries).
 */
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import { TenantTsdbs } from "../src/store/tenant-tsdbs.ts";
import { startHotWriter } from "../src/workers/hot-writer.ts";

const [url, dir, killAfter] = process.argv.slice(2) as [string, string, string | undefined];
const killAt = process.env.KILL_AT ?? "applied";
const client = await openJetStream({ url, name: "hot-writer-kill-child", requestTimeoutMs: 5_000 });
const tsdbs = new TenantTsdbs({
  dir,
  blockRangeMs: 7_200_000,
  defaults: { maxSeries: 10_000, maxSeriesPerMetric: 10_000 },
});
const seen = new Map<string, number>();
/** Counts an event; dies at the n-th of the one it was told. */
const count = (event: string) => {
  const n = (seen.get(event) ?? 0) + 1;
  seen.set(event, n);
  if (killAfter !== undefined && event === killAt && n === Number(killAfter))
    process.kill(process.pid, "SIGKILL");
};
const batch = process.env.BATCH === undefined ? undefined : Number(process.env.BATCH);
const writer = await startHotWriter({
  client,
  tsdbs,
  tenantOf: async (id) => ({ id, maxSeries: undefined, maxSeriesPerMetric: undefined }),
  partitions: Number(process.env.PARTITIONS ?? 2),
  ackWaitMs: Number(process.env.ACK_WAIT_MS ?? 300),
  expiresMs: 200,
  ...(batch === undefined ? {} : { maxBatchMessages: batch }),
  beforeApply: (batch) => {
    process.stdout.write(`fetched ${batch.map((m) => m.seq).join(",")}\n`);
    count("fetched");
    if (batch.every((m) => m.deliveryCount === 1)) count("fresh");
  },
  afterDurable: (seqs) => {
    process.stdout.write(`durable ${seqs.join(",")}\n`);
    count("durable");
  },
  onApplied: ({ seq }) => {
    process.stdout.write(`applied ${seq}\n`);
    count("applied");
  },
  onDropped: (event) => process.stdout.write(`dropped ${JSON.stringify(event)}\n`),
  onError: (error) => {
    process.stderr.write(`hot writer: ${String(error)}\n`);
    process.stdout.write(`error ${(error as { code?: string }).code ?? "unknown"}\n`);
  },
});
process.stdout.write("ready\n");
process.stdin.on("end", async () => {
  await writer.stop();
  await tsdbs.close();
  await client.close();
  process.exit(0);
});
process.stdin.resume();
