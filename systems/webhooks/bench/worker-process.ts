/**
 * One delivery worker PROCESS, for the bench (1, 2, 4 processes) and the process tests
 * (the exactly-once race, the SIGKILL mid-send): its own pool on the given PostgreSQL
 * schema, a sender allowed to reach 127.0.0.1 over plain http (the local receiver), and
 * a DeliveryWorker on the system clock. Talks over IPC: sends `{kind:"ready"}` once
 * started; on `"stop"` drains (worker.stop), closes, sends `{kind:"stopped"}` and exits.
 * A SIGKILL is the crash the tests want: nothing is drained.
 *
 * argv[2]: JSON of WorkerProcessConfig.
 *
 * @example
 * const child = fork("bench/worker-process.ts", [JSON.stringify(config)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
 */

import type { PhaseTimeouts } from "@casebook/infra/http/outbound";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { HttpSender } from "../src/clients/http-sender.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";
import { DeliveryWorker } from "../src/workers/delivery-worker.ts";

export interface WorkerProcessConfig {
  url: string;
  schema: string;
  workerId: string;
  maxInFlight: number;
  leaseMs: number;
  httpDeadlineMs: number;
  pollIntervalMs: number;
  /** Sender phase timeouts; they should add up to at most httpDeadlineMs. */
  timeouts: PhaseTimeouts;
  /** Pool connections of this process. */
  poolMax: number;
  /** Keep-alive sockets per receiver origin. */
  socketsPerOrigin: number;
}

export type WorkerProcessMessage = { kind: "ready"; pid: number } | { kind: "stopped" };

const config = JSON.parse(process.argv[2] ?? "{}") as WorkerProcessConfig;
const db = await openDatabase({
  system: "webhooks",
  url: config.url,
  schema: config.schema,
  pool: { maxConnections: config.poolMax },
});
const sender = new HttpSender({
  policy: createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] }),
  timeouts: config.timeouts,
  maxSocketsPerOrigin: config.socketsPerOrigin,
});
const worker = new DeliveryWorker({
  db,
  clock: systemClock,
  random: systemRandom,
  workerId: config.workerId,
  sender,
  httpDeadlineMs: config.httpDeadlineMs,
  leaseMs: config.leaseMs,
  maxInFlight: config.maxInFlight,
  pollIntervalMs: config.pollIntervalMs,
  log: (obj, msg) => {
    if (process.env.WEBHOOKS_WORKER_LOG === "1")
      process.stderr.write(`${config.workerId}: ${msg} ${JSON.stringify(obj)}\n`);
  },
});

function tell(message: WorkerProcessMessage): Promise<void> {
  return new Promise((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );
}

process.on("message", (message) => {
  if (message !== "stop") return;
  void (async () => {
    await worker.stop();
    sender.close();
    await db.close();
    await tell({ kind: "stopped" });
    process.disconnect();
  })();
});
// The parent going away is a stop too: never outlive the test or bench that started us.
process.on("disconnect", () => {
  void worker.stop().finally(() => process.exit(0));
});

worker.start();
await tell({ kind: "ready", pid: process.pid });
