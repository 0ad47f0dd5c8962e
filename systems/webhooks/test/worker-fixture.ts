/**
 * What the delivery worker's tests share: worker PROCESSES (bench/worker-process.ts) with
 * test timeouts, in-process workers with short timeouts on a sender allowed to reach
 * the local receiver, and small database reads the assertions use.
 */
import { after } from "node:test";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { startWorkerProcess as startChild, type WorkerChild } from "../bench/worker-children.ts";
import type { WorkerProcessConfig } from "../bench/worker-process.ts";
import { HttpSender } from "../src/clients/http-sender.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";
import { DeliveryWorker, type DeliveryWorkerOptions } from "../src/workers/delivery-worker.ts";

/**
 * Phase timeouts of the test senders, adding up to TEST_DEADLINE_MS: generous, because the
 * receiver shares a loaded 2-core machine, and an answer that misses its timeout is a
 * retry — a duplicate by design (WH-14) that would blur what a test counts.
 */
export const TEST_TIMEOUTS = { connectMs: 2_000, headersMs: 5_000, bodyMs: 2_000 };
export const TEST_DEADLINE_MS = 9_000;
export const TEST_LEASE_MS = 10_000;

/**
 * A sender allowed to reach the local receiver. Every test endpoint shares one origin
 * (127.0.0.1:port), so the per-origin socket bound must cover the worker's slots: requests
 * beyond it queue inside the agent in arrival order, a FIFO under the fair scheduler.
 */
export function testSender(socketsPerOrigin = 64): HttpSender {
  return new HttpSender({
    policy: createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] }),
    timeouts: TEST_TIMEOUTS,
    maxSocketsPerOrigin: socketsPerOrigin,
  });
}

let workersMade = 0;

/** An in-process worker with test-sized bounds and its own id; `overrides` win. */
export function testWorker(
  db: Database,
  clock: Clock,
  sender: HttpSender,
  overrides: Partial<DeliveryWorkerOptions> = {},
): DeliveryWorker {
  return new DeliveryWorker({
    db,
    clock,
    random: seededRandom("worker-test"),
    workerId: `w-test-${++workersMade}`,
    sender,
    httpDeadlineMs: TEST_DEADLINE_MS,
    leaseMs: TEST_LEASE_MS,
    maxInFlight: 16,
    pollIntervalMs: 10,
    ...overrides,
  });
}

/** A worker process with the test timeouts unless given. */
export function startWorkerProcess(
  config: Omit<WorkerProcessConfig, "timeouts" | "socketsPerOrigin"> &
    Partial<Pick<WorkerProcessConfig, "timeouts" | "socketsPerOrigin">>,
): WorkerChild {
  return startChild({ timeouts: TEST_TIMEOUTS, socketsPerOrigin: 64, ...config });
}

/**
 * What a file of worker-process tests starts, stopped after the file in this order: the
 * worker processes (killed), the receivers (closed), then the schemas (dropped).
 */
export function cleanUpAfterFile(): {
  children: WorkerChild[];
  receivers: { close(): Promise<void> }[];
  schemas: { drop(): Promise<void> }[];
} {
  const held = {
    children: [] as WorkerChild[],
    receivers: [] as { close(): Promise<void> }[],
    schemas: [] as { drop(): Promise<void> }[],
  };
  after(async () => {
    for (const c of held.children) await c.kill();
    for (const r of held.receivers) await r.close();
    for (const s of held.schemas) await s.drop();
  });
  return held;
}

/** Deliveries per state, e.g. { succeeded: 10 }. */
export async function statesOf(db: Database, tenantId?: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: bigint }>(
    `SELECT state, count(*) AS n FROM deliveries WHERE ($1::text IS NULL OR tenant_id = $1)
      GROUP BY state ORDER BY state`,
    [tenantId ?? null],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** The earliest next_attempt_at of an unfinished delivery (epoch ms), or undefined. */
export async function nextDueMs(db: Database): Promise<number | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(
    "SELECT min(next_attempt_at) AS at FROM deliveries WHERE state IN ('pending', 'in_flight')",
  );
  return rows[0]?.at?.getTime();
}

export type { WorkerChild };
