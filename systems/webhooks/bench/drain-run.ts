/**
 * The drain scenario: a backlog of committed deliveries, N worker PROCESSES, a local
 * receiver. Throughput is end to end — committed delivery → signed request → the receiver's
 * 2xx → the recorded outcome — measured at the receiver from its first request to its
 * last (process start-up is not counted), and the run counts duplicates: a webhook-id
 * received twice would be a broken lease.
 *
 * @example
 * const result = await runDrain(target, { workers: 2, backlog: 20_000, … });
 * result.ratePerS; // deliveries/s
 */

import { createReceiverTenant, newTestSecret, seedBacklog } from "./backlog.ts";
import { benchErrors } from "./bench-errors.ts";
import type { PgTarget } from "./pg-target.ts";
import { startWebhookReceiver } from "./webhook-receiver.ts";
import { startWorkerProcess, type WorkerChild } from "./worker-children.ts";
import type { WorkerProcessConfig } from "./worker-process.ts";

export interface DrainOptions {
  workers: number;
  /** Deliveries to queue (rounded down to whole events × subscriptions). */
  backlog: number;
  subscriptions: number;
  payloadBytes: number;
  worker: Pick<WorkerProcessConfig, "maxInFlight" | "poolMax">;
  log: (line: string) => void;
}

export interface DrainResult {
  deliveries: number;
  /** First request to last, at the receiver. */
  seconds: number;
  ratePerS: number;
  duplicates: number;
  unverified: number;
}

/** Bench sends: keep-alive sockets per receiver origin and phase timeouts (10 s in all). */
export const BENCH_TIMEOUTS = { connectMs: 2_000, headersMs: 6_000, bodyMs: 2_000 };
export const BENCH_DEADLINE_MS = 10_000;
export const BENCH_LEASE_MS = 15_000;
/** Bound on a drain: the backlog at 50 deliveries/s, at least two minutes. */
function drainWaitMs(deliveries: number): number {
  return Math.max(120_000, (deliveries / 50) * 1_000);
}

export function benchWorkerConfig(
  target: PgTarget,
  schema: string,
  workerId: string,
  worker: DrainOptions["worker"],
): WorkerProcessConfig {
  return {
    url: target.url,
    schema,
    workerId,
    maxInFlight: worker.maxInFlight,
    poolMax: worker.poolMax,
    leaseMs: BENCH_LEASE_MS,
    httpDeadlineMs: BENCH_DEADLINE_MS,
    pollIntervalMs: 10,
    timeouts: BENCH_TIMEOUTS,
    socketsPerOrigin: Math.max(8, worker.maxInFlight),
  };
}

export async function runDrain(target: PgTarget, options: DrainOptions): Promise<DrainResult> {
  const run = await target.freshSchema(`drain_${options.workers}`);
  const secret = newTestSecret();
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  const rx = await startWebhookReceiver({
    secrets: [secret],
    keepRequests: false,
    onRequest: (r) => {
      first = Math.min(first, r.receivedAtMs);
      last = Math.max(last, r.receivedAtMs);
    },
  });
  const children: WorkerChild[] = [];
  try {
    const tenant = await createReceiverTenant(run.db, {
      name: "bench",
      url: rx.url("/drain"),
      secret,
      subscriptions: options.subscriptions,
    });
    const events = Math.max(1, Math.floor(options.backlog / options.subscriptions));
    const deliveries = events * options.subscriptions;
    options.log(
      `drain: seeding ${deliveries} deliveries (${events} events × ${options.subscriptions} subscriptions)`,
    );
    await seedBacklog(run.db, { ...tenant, events, nowMs: Date.now(), payloadBytes: options.payloadBytes });
    await run.db.exec("ANALYZE");
    options.log(`drain: ${options.workers} worker process(es)`);
    for (let i = 0; i < options.workers; i++)
      children.push(startWorkerProcess(benchWorkerConfig(target, run.schema, `bench-${i}`, options.worker)));
    await Promise.all(children.map((c) => c.next("ready")));
    await rx
      .waitFor(() => rx.requests >= deliveries, drainWaitMs(deliveries))
      .catch(() => {
        throw benchErrors.create("WEBHOOKS_BENCH_INCOMPLETE", {
          fields: { queued: deliveries, arrived: rx.requests },
        });
      });
    await Promise.all(children.map((c) => c.stop()));
    const seconds = Math.max(0.001, (last - first) / 1_000);
    return {
      deliveries,
      seconds,
      ratePerS: (deliveries - 1) / seconds,
      duplicates: rx.requests - rx.countsByKey.size,
      unverified: rx.unverified,
    };
  } finally {
    for (const c of children) await c.kill();
    await rx.close();
    await run.drop();
  }
}
