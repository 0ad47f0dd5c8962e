/**
 * WH-21 measured: one tenant floods, another keeps its latency. Tenant A has 10,000
 * deliveries queued; tenant B sends events paced at 25/s through ingest → relay → fan-out →
 * worker → receivers that take their time to answer (a receiver doing its own work): B's
 * 250 ms, A's 1 s. The worker has 32 send slots; A may hold 24 of them (~24 attempts/s), B
 * ~6 at a time (~25/s): ~50 attempts/s, bounded by slots waiting on remote endpoints, as the
 * seed's worker (60 attempts/s) is, not by CPU — so what is measured is the scheduling, not
 * this shared 2-core machine running out of CPU under a flood. (With A's receiver at 250 ms
 * too, A's ~100 attempts/s were CPU: on a CI host running other test files, the flood's own
 * work pushed B's p99 past 2× — 1,151 against 549 ms — with B's deliveries waiting in the
 * worker's claim cycle and pool, not behind A's backlog. The slot and backlog contention
 * the claim is about is the same at either rate.)
 *
 * B's commit→2xx is measured with A's flood off and on, in alternating phases of 25
 * events (off, on, off, on, … 100 events each way): A's backlog is switched between due
 * and not-yet-due with one UPDATE. Interleaving makes the comparison fair on a shared
 * machine: whatever else runs here slows both conditions alike, where a baseline measured
 * first and a flood measured second would compare two different moments.
 *
 * The worker runs as its own process, as deployed: the receivers stand for remote endpoints,
 * so their work on A's requests must not stall the worker's event loop (in one process,
 * on a CI machine running other test files at once, it did: B's p99 beside the flood was
 * the receiver's and the worker's CPU queued on one thread, not the scheduler's order).
 *
 * Under a global FIFO B would wait behind A's whole backlog (minutes at that rate).
 * Per-tenant weighted fair claiming, the scheduler's DRR, and the per-tenant limits (A may
 * hold at most three quarters of the slots and of the window, which leaves B's ~6 slots'
 * worth of traffic, 25/s × 250 ms, a slot the moment it is claimed) keep B's p99 within 2×
 * of its baseline.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { Database } from "@casebook/infra/sql/sql";
import { requirePostgres } from "@casebook/lab/test-engines";
import { createReceiverTenant, newTestSecret, seedBacklog } from "../bench/backlog.ts";
import { startWebhookReceiver } from "../bench/webhook-receiver.ts";
import { ingestEvent } from "../src/store/event-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { openPostgresTestSchema } from "./store-backends.ts";
import { startWorkerProcess, TEST_DEADLINE_MS, TEST_LEASE_MS } from "./worker-fixture.ts";

const FLOOD = 10_000;
/** B's events per condition (flood off, flood on), in phases of PHASE_EVENTS. */
const B_EVENTS = 100;
const PHASE_EVENTS = 25;
/** B's pacing: 25 events/s. */
const B_GAP_MS = 40;
/** B's endpoint answers in 250 ms; A's, flooded, in 1 s (see above). */
const B_RECEIVER_MS = 250;
const A_RECEIVER_MS = 1_000;
/** After switching the flood off, A's claimed deliveries still finish (≤ one response time). */
const SETTLE_MS = A_RECEIVER_MS + 100;
const MAX_IN_FLIGHT = 32;
const WAIT_MS = 60_000;
/** When A's backlog is "off": due long after the test. */
const PAUSED_MS = 3_600_000;

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Nearest-rank percentile of `values` (ms). */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** B's commit→2xx per delivery by phase, from the store: the 2xx arrived at started_at + duration. */
async function latenciesByPhase(db: Database, tenantId: string): Promise<{ off: number[]; on: number[] }> {
  const { rows } = await db.query<{ flood: boolean; ms: number }>(
    `SELECT (e.payload->>'flood')::boolean AS flood,
            extract(epoch FROM a.started_at - e.created_at) * 1000 + a.duration_ms AS ms
       FROM attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
      WHERE a.tenant_id = $1 AND a.response_class = '2xx'`,
    [tenantId],
  );
  return {
    off: rows.filter((r) => !r.flood).map((r) => Number(r.ms)),
    on: rows.filter((r) => r.flood).map((r) => Number(r.ms)),
  };
}

/** A's backlog due now (flood on) or in an hour (off); deliveries already claimed finish either way. */
async function setFlood(db: Database, tenantId: string, on: boolean): Promise<void> {
  const dueAt = new Date(Date.now() + (on ? 0 : PAUSED_MS));
  await db.query("UPDATE deliveries SET next_attempt_at = $2 WHERE tenant_id = $1 AND state = 'pending'", [
    tenantId,
    dueAt,
  ]);
}

test("WH-21 tenant A floods 10,000 deliveries while B sends 100: B's p99 commit→2xx stays within 2× its no-flood baseline", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const schema = await openPostgresTestSchema(url, { prefix: "wh_worker_fair", maxConnections: 6 });
  cleanups.push(() => schema.drop());
  const db = schema.db;
  const secret = newTestSecret();
  const [rxA, rxB] = await Promise.all([
    startWebhookReceiver({ secrets: [secret], keepRequests: false }),
    startWebhookReceiver({ secrets: [secret], keepRequests: false }),
  ]);
  cleanups.push(
    () => rxA.close(),
    () => rxB.close(),
  );
  rxA.setMode({ kind: "ok", delayMs: A_RECEIVER_MS });
  rxB.setMode({ kind: "ok", delayMs: B_RECEIVER_MS });
  const a = await createReceiverTenant(db, { name: "a", url: rxA.url("/a"), secret });
  const b = await createReceiverTenant(db, { name: "b", url: rxB.url("/b"), secret });
  await seedBacklog(db, { ...a, events: FLOOD, nowMs: Date.now(), payloadBytes: 128 });
  await setFlood(db, a.tenantId, false);
  const relay = new OutboxRelay(db, { publisher: new Dispatcher(db), pollIntervalMs: 5, onError: () => {} });
  const worker = startWorkerProcess({
    url,
    schema: schema.schema,
    workerId: "fair-1",
    maxInFlight: MAX_IN_FLIGHT,
    leaseMs: TEST_LEASE_MS,
    httpDeadlineMs: TEST_DEADLINE_MS,
    pollIntervalMs: 10,
    poolMax: 4,
  });
  cleanups.push(async () => {
    await relay.stop();
    await worker.kill();
  });
  relay.start();
  await worker.next("ready");
  for (let phase = 0; phase < (2 * B_EVENTS) / PHASE_EVENTS; phase++) {
    const flood = phase % 2 === 1;
    await setFlood(db, a.tenantId, flood);
    if (!flood && phase > 0) await sleep(SETTLE_MS); // pacing: the flood's last claims finish
    for (let i = 0; i < PHASE_EVENTS; i++) {
      await ingestEvent(
        db,
        b.tenantId,
        { type: "b.tick", payload: { flood, i } },
        { nowMs: Date.now(), randomBytes },
      );
      await sleep(B_GAP_MS);
    }
  }
  await rxB.waitFor(() => rxB.countsByKey.size >= 2 * B_EVENTS, WAIT_MS);
  await setFlood(db, a.tenantId, false);
  await relay.stop();
  await worker.stop(); // drains: every answer is recorded
  const { off, on } = await latenciesByPhase(db, b.tenantId);
  assert.equal(off.length, B_EVENTS);
  assert.equal(on.length, B_EVENTS);
  const aDone = await db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM deliveries WHERE tenant_id = $1 AND state = 'succeeded'",
    [a.tenantId],
  );
  const aServed = Number(aDone.rows[0]!.n);
  assert.ok(
    aServed > 0 && aServed < FLOOD / 2,
    "B was served while most of A's flood still waited (a FIFO would serve A first)",
  );
  const [p99Off, p99On] = [percentile(off, 99), percentile(on, 99)];
  t.diagnostic(`slowest under the flood, by stage: ${await slowest(db, b.tenantId)}`);
  t.diagnostic(`B's attempts that were not 2xx, by class: ${await failedAttempts(db, b.tenantId)}`);
  t.diagnostic(
    `B commit→2xx p50/p99: flood off ${percentile(off, 50).toFixed(0)}/${p99Off.toFixed(0)} ms, ` +
      `flood on ${percentile(on, 50).toFixed(0)}/${p99On.toFixed(0)} ms (ratio ${(p99On / p99Off).toFixed(2)}); ` +
      `A got ${aServed} of its ${FLOOD} meanwhile`,
  );
  assert.ok(p99On <= 2 * p99Off, `p99 beside the flood ${p99On.toFixed(0)} ms > 2 × ${p99Off.toFixed(0)} ms`);
});

/** The 3 slowest of B's deliveries under the flood, split into relay / claim+check / send ms. */
async function slowest(db: Database, tenantId: string): Promise<string> {
  const { rows } = await db.query<{ relay: number; pick: number; send: number }>(
    `SELECT round(extract(epoch FROM d.created_at - e.created_at) * 1000) AS relay,
            round(extract(epoch FROM a.started_at - d.created_at) * 1000) AS pick, a.duration_ms AS send
       FROM attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
      WHERE a.tenant_id = $1 AND (e.payload->>'flood')::boolean
      ORDER BY a.started_at - e.created_at + make_interval(secs => a.duration_ms / 1000.0) DESC LIMIT 3`,
    [tenantId],
  );
  return rows.map((r) => `${r.relay}/${r.pick}/${r.send}`).join(", ");
}

/** B's attempts that did not get a 2xx, by response class (a retry shows up as a slow pick). */
async function failedAttempts(db: Database, tenantId: string): Promise<string> {
  const { rows } = await db.query<{ response_class: string; n: bigint }>(
    `SELECT response_class, count(*) AS n FROM attempts
      WHERE tenant_id = $1 AND response_class <> '2xx' GROUP BY response_class ORDER BY response_class`,
    [tenantId],
  );
  return rows.length === 0 ? "none" : rows.map((r) => `${r.response_class} ${r.n}`).join(", ");
}
