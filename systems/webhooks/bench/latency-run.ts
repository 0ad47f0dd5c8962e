/**
 * The latency scenario: events ingested open loop at a fixed delivery rate (the seed's
 * peak, 350 tasks/s), through the outbox relay and fan-out in this process, delivered by
 * one worker PROCESS to a local receiver. Commit→2xx is measured at the receiver, from
 * the event's commit time carried in the body (`timestamp`): the relay's poll, the claim
 * round, the re-check, signing and the request are all inside it. Open loop: arrivals do
 * not wait for deliveries, so a stall shows as latency instead of a slower producer.
 *
 * @example
 * const result = await runLatency(target, { ratePerS: 350, durationMs: 10_000, warmupMs: 2_000, … });
 * result.commitTo2xxMs.p99;
 */
import { randomBytes } from "node:crypto";
import type { Queryable } from "@casebook/infra/sql/sql";
import { Histogram } from "@casebook/kit/histogram";
import { type LoadReport, runOpenLoop } from "@casebook/lab/load-generator";
import { ingestEvent } from "../src/store/event-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { createReceiverTenant, newTestSecret } from "./backlog.ts";
import { benchErrors } from "./bench-errors.ts";
import { benchWorkerConfig, type DrainOptions } from "./drain-run.ts";
import type { PgTarget } from "./pg-target.ts";
import { startWebhookReceiver } from "./webhook-receiver.ts";
import { startWorkerProcess, type WorkerChild } from "./worker-children.ts";

export interface LatencyOptions {
  /** Deliveries per second (events/s × subscriptions). */
  ratePerS: number;
  durationMs: number;
  warmupMs: number;
  subscriptions: number;
  payloadBytes: number;
  worker: DrainOptions["worker"];
  log: (line: string) => void;
}

export interface LatencyResult {
  /** The producer's side: ingest calls (achieved rate, errors, drops). */
  ingest: LoadReport;
  /** Measured deliveries (events committed after the warmup). */
  delivered: number;
  commitTo2xxMs: { p50: number; p90: number; p99: number; max: number };
  /** Where the time went, from the store: commit → fan-out (relay), fan-out → attempt start (worker). */
  stagesMs: { relayP50: number; relayP99: number; workerP50: number; workerP99: number };
  duplicates: number;
}

// Stage latencies of the measured events: the relay's (event → its deliveries) and the worker's
// (delivery created → its first attempt started).
const STAGES = `
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY relay_ms) AS relay_p50,
         percentile_cont(0.99) WITHIN GROUP (ORDER BY relay_ms) AS relay_p99,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY worker_ms) AS worker_p50,
         percentile_cont(0.99) WITHIN GROUP (ORDER BY worker_ms) AS worker_p99
    FROM (SELECT extract(epoch FROM d.created_at - e.created_at) * 1000 AS relay_ms,
                 extract(epoch FROM a.started_at - d.created_at) * 1000 AS worker_ms
            FROM deliveries d JOIN events e ON e.id = d.event_id
            JOIN attempts a ON a.delivery_id = d.id AND a.attempt_no = 1
           WHERE e.created_at >= $1) AS s`;

async function stageLatencies(db: Queryable, fromMs: number): Promise<LatencyResult["stagesMs"]> {
  const { rows } = await db.query<Record<string, number | null>>(STAGES, [new Date(fromMs)]);
  const r = rows[0] ?? {};
  return {
    relayP50: Number(r.relay_p50 ?? 0),
    relayP99: Number(r.relay_p99 ?? 0),
    workerP50: Number(r.worker_p50 ?? 0),
    workerP99: Number(r.worker_p99 ?? 0),
  };
}

/** Bound on the wait for the last deliveries after the producer stops. */
const SETTLE_WAIT_MS = 60_000;
const RELAY_POLL_MS = 5;
/**
 * Relays side by side (SKIP LOCKED splits the outbox between them). One relay publishes
 * one event at a time, a fan-out and a mark — two commits — each; at the seed's peak
 * (~117 events/s × 3 subscriptions) a single one is saturated on this machine and the
 * outbox backs up, so the bench runs several, as a deployment would run replicas.
 */
const RELAYS = 4;
/** Small claims, so the relays share a burst instead of one taking it all. */
const RELAY_MAX_BATCH = 8;

export async function runLatency(target: PgTarget, options: LatencyOptions): Promise<LatencyResult> {
  const run = await target.freshSchema("latency");
  const secret = newTestSecret();
  const latencyUs = new Histogram({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000 });
  let measureFromMs = Number.POSITIVE_INFINITY;
  const rx = await startWebhookReceiver({
    secrets: [secret],
    keepRequests: false,
    onRequest: (r) => {
      const commitMs = r.receivedAtMs - r.commitToReceiptMs;
      if (commitMs >= measureFromMs && Number.isFinite(r.commitToReceiptMs))
        latencyUs.record(Math.max(1, Math.round(r.commitToReceiptMs * 1_000)));
    },
  });
  const relays = Array.from(
    { length: RELAYS },
    (_, i) =>
      new OutboxRelay(run.db, {
        publisher: new Dispatcher(run.db),
        owner: `bench-relay-${i}`,
        maxBatch: RELAY_MAX_BATCH,
        pollIntervalMs: RELAY_POLL_MS,
        onError: (err) => options.log(`relay: ${String(err)}`),
      }),
  );
  let worker: WorkerChild | undefined;
  try {
    const tenant = await createReceiverTenant(run.db, {
      name: "bench",
      url: rx.url("/latency"),
      secret,
      subscriptions: options.subscriptions,
    });
    for (const relay of relays) relay.start();
    worker = startWorkerProcess(benchWorkerConfig(target, run.schema, "bench-latency", options.worker));
    await worker.next("ready");
    const eventsPerS = options.ratePerS / options.subscriptions;
    const pad = "x".repeat(Math.max(0, options.payloadBytes - 32));
    options.log(
      `latency: ${eventsPerS.toFixed(1)} events/s × ${options.subscriptions} subscriptions, open loop`,
    );
    measureFromMs = Date.now() + options.warmupMs;
    const ingest = await runOpenLoop({
      ratePerS: eventsPerS,
      durationMs: options.durationMs + options.warmupMs,
      warmupMs: options.warmupMs,
      maxInFlight: 256,
      requestTimeoutMs: 10_000,
      task: ({ index }) =>
        ingestEvent(
          run.db,
          tenant.tenantId,
          { type: "bench.tick", payload: { n: index, pad } },
          { nowMs: Date.now(), randomBytes: (n) => randomBytes(n) },
        ),
    });
    const expected = (ingest.ok + ingest.warmupCount) * options.subscriptions;
    await rx
      .waitFor(() => rx.requests >= expected, SETTLE_WAIT_MS)
      .catch(() => {
        throw benchErrors.create("WEBHOOKS_BENCH_INCOMPLETE", {
          fields: { queued: expected, arrived: rx.requests },
        });
      });
    await worker.stop(); // drained: every attempt recorded
    const stagesMs = await stageLatencies(run.db, measureFromMs);
    const s = latencyUs.summary();
    const ms = (us: number) => us / 1_000;
    return {
      ingest,
      delivered: s.count,
      commitTo2xxMs: { p50: ms(s.p50), p90: ms(s.p90), p99: ms(s.p99), max: ms(s.max) },
      stagesMs,
      duplicates: rx.requests - rx.countsByKey.size,
    };
  } finally {
    for (const relay of relays) await relay.stop();
    await worker?.stop().catch(() => worker?.kill());
    await rx.close();
    await run.drop();
  }
}
