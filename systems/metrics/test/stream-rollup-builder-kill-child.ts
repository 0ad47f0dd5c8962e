/**
 * Child of stream-rollup-builder-kill.test.ts: a rollup builder on the JetStream at argv[2],
 * its tiers in argv[3], acks redelivered after 300 ms, batches of 8 messages (one DuckDB commit each). Prints `ready`, then `committed <seq>
 * <applied|skipped>` after each message's DuckDB commit and before its ack; with argv[4] = n it
 * SIGKILLs itself right after the n-th commit — between the commit and the ack.
 */
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import { RollupStore } from "../src/store/rollup-store.ts";
import { startRollupBuilder } from "../src/workers/rollup-builder.ts";

const [url, dir, killAfter] = process.argv.slice(2) as [string, string, string | undefined];
const client = await openJetStream({ url, name: "rollup-kill-child", requestTimeoutMs: 5_000 });
const store = await RollupStore.open({ dir, latenessMs: 300_000 });
let committed = 0;
const builder = await startRollupBuilder({
  client,
  store,
  ackWaitMs: 300,
  maxBatchMessages: 8,
  expiresMs: 200,
  closeIntervalMs: 3_600_000,
  onApplied: ({ seq, applied }) => {
    committed++;
    process.stdout.write(`committed ${seq} ${applied ? "applied" : "skipped"}\n`);
    if (killAfter !== undefined && committed === Number(killAfter)) process.kill(process.pid, "SIGKILL");
  },
  onError: (error) => process.stderr.write(`rollup builder: ${String(error)}\n`),
});
process.stdout.write("ready\n");
process.stdin.on("end", async () => {
  await builder.stop();
  await store.close();
  await client.close();
  process.exit(0);
});
process.stdin.resume();
