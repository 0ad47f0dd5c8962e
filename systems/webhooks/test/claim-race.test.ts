/**
 * Delivery claims raced by worker PROCESSES on the real PostgreSQL (ARCHITECTURE: every
 * "never twice" is tested with several processes on one engine):
 *
 * - WH-10: four workers claim 10 000 due deliveries at once, with leases longer than
 *   their work. Every claim is recorded in a table without a unique constraint: each
 *   delivery appears exactly once (none twice, none missing), and every CAS write won.
 *   A claim PostgreSQL aborts (a deadlock) is retried by the child, so without the row
 *   lock the double-claim count fails the test, not a crashed child.
 * - WH-11: a worker holding leases mid-send is SIGKILLed. Nothing is lost: after the
 *   lease another worker claims the SAME delivery ids (lease_version bumped), and the
 *   dead worker's write, were it to arrive late, loses its compare-and-swap.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Database } from "@casebook/infra/sql/sql";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { requirePostgres } from "@casebook/lab/test-engines";
import { claimDue, type DeliveryLease } from "../src/store/delivery-claims.ts";
import { finishWithoutAttempt, recordAttempts } from "../src/store/delivery-results.ts";
import { openPostgresTestSchema } from "./store-backends.ts";

const CHILD = fileURLToPath(new URL("./claim-race-child.ts", import.meta.url));
/** Bound on any wait for a child: generous for a loaded 2-core machine, still finite. */
const CHILD_WAIT_MS = 60_000;

type Message =
  | { kind: "ready" }
  | { kind: "done"; claimed: number; won: number; aborted: number }
  | HoldingMessage;
interface HoldingMessage {
  kind: "holding";
  leases: { deliveryId: string; leaseVersion: string; leaseExpiresAtMs: number }[];
}

function nextMessage<K extends Message["kind"]>(
  child: SpawnedChild,
  kind: K,
): Promise<Extract<Message, { kind: K }>> {
  return child.nextMessage((message) => (message as Message).kind === kind, CHILD_WAIT_MS);
}

/** A worker process, ready to take "go", in `children` (killed before the schema is dropped). */
async function spawnWorker(args: string[], children: SpawnedChild[]): Promise<SpawnedChild> {
  const child = await spawnChild(CHILD, {
    args,
    ipc: true,
    ready: { message: (message) => (message as Message).kind === "ready" },
    readyTimeoutMs: CHILD_WAIT_MS,
  });
  children.push(child);
  return child;
}

/** The test's cleanup: every child gone, then its schema. */
function cleanUp(t: { after(fn: () => unknown): void }, drop: () => Promise<void>): SpawnedChild[] {
  const children: SpawnedChild[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await drop();
  });
  return children;
}

/** `n` due deliveries of one tenant and subscription, written set-wise (the seeding is not under test). */
async function seedDeliveries(db: Database, n: number): Promise<void> {
  await db.exec(
    "CREATE TABLE test_claims (delivery_id text NOT NULL, worker_id text NOT NULL, lease_version int8 NOT NULL)",
  );
  await db.query(
    `WITH t AS (INSERT INTO tenants (id, name, created_at) VALUES ('race', 'race', now()) RETURNING id),
          s AS (INSERT INTO subscriptions (id, tenant_id, url, created_at, updated_at)
                SELECT 'sub_' || md5('race'), id, 'https://race.example.com', now(), now() FROM t RETURNING id, tenant_id),
          e AS (INSERT INTO events (id, tenant_id, type, payload, payload_hash, payload_bytes, payload_expires_at, created_at)
                SELECT 'msg_' || md5(g::text), s.tenant_id, 'race.tick', jsonb_build_object('g', g), md5(g::text) || md5(g::text),
                       10, now() + interval '1 day', now()
                  FROM s, generate_series(1, $1) AS g RETURNING id, seq, tenant_id)
     INSERT INTO deliveries (id, event_id, event_seq, subscription_id, tenant_id, state, next_attempt_at, deadline_at,
                             created_at, updated_at)
     SELECT 'dlv_' || md5(e.id), e.id, e.seq, s.id, e.tenant_id, 'pending', now() - interval '1 second',
            now() + interval '1 day', now(), now()
       FROM e, s`,
    [n],
  );
}

test("WH-10 four worker processes claiming 10,000 due deliveries: each claimed by exactly one, none missed", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const DELIVERIES = 10_000;
  const { db, schema, drop } = await openPostgresTestSchema(url, { prefix: "wh_race" });
  const children = cleanUp(t, drop);
  await seedDeliveries(db, DELIVERIES);
  const workers = await Promise.all(
    ["w1", "w2", "w3", "w4"].map((id) => spawnWorker([url, schema, id, "race", "60000", "5000"], children)),
  );
  const done = workers.map((child) => nextMessage(child, "done"));
  await Promise.all(workers.map((child) => child.sendMessage("go"))); // all four start together
  const reports = await Promise.all(done);
  const { rows } = await db.query<{ claims: bigint; distinct_ids: bigint; workers: bigint }>(
    "SELECT count(*) AS claims, count(DISTINCT delivery_id) AS distinct_ids, count(DISTINCT worker_id) AS workers FROM test_claims",
  );
  assert.equal(rows[0]!.claims, BigInt(DELIVERIES), "no delivery claimed twice");
  assert.equal(rows[0]!.distinct_ids, BigInt(DELIVERIES), "none missing");
  assert.ok(rows[0]!.workers >= 2n, "the work was shared between processes");
  assert.equal(
    reports.reduce((sum, r) => sum + r.won, 0),
    DELIVERIES,
    "every CAS write won: no lease was taken over",
  );
  const states = await db.query<{ state: string; n: bigint }>(
    "SELECT state, count(*) AS n FROM deliveries GROUP BY state",
  );
  assert.deepEqual(states.rows, [{ state: "succeeded", n: BigInt(DELIVERIES) }]);
  const attempts = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM attempts WHERE attempt_no = 1");
  assert.equal(attempts.rows[0]!.n, BigInt(DELIVERIES));
  t.diagnostic(
    `claims per worker: ${reports.map((r) => r.claimed).join(", ")}; claims aborted by PostgreSQL and retried: ${reports.map((r) => r.aborted).join(", ")}`,
  );
});

test("WH-11 a worker SIGKILLed mid-send: after its lease another claims the same deliveries; the dead one's late write loses", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const DELIVERIES = 20;
  const LEASE_MS = 1_500;
  const HTTP_DEADLINE_MS = 400;
  const { db, schema, drop } = await openPostgresTestSchema(url, { prefix: "wh_kill" });
  const children = cleanUp(t, drop);
  await seedDeliveries(db, DELIVERIES);
  const doomed = await spawnWorker(
    [url, schema, "doomed", "hold", String(LEASE_MS), String(HTTP_DEADLINE_MS)],
    children,
  );
  const holding = nextMessage(doomed, "holding");
  await doomed.sendMessage("go");
  const { leases } = await holding;
  assert.equal(leases.length, DELIVERIES, "the doomed worker holds every delivery");
  await doomed.kill("SIGKILL");
  // Wait for the event that matters — the leases running out — by polling the claim itself.
  const leaseEndMs = Math.max(...leases.map((l) => l.leaseExpiresAtMs));
  let reclaimed: Awaited<ReturnType<typeof claimDue>> = [];
  for (let poll = 0; poll < 200 && reclaimed.length === 0; poll++) {
    reclaimed = await claimDue(db, {
      workerId: "survivor",
      nowMs: Date.now(),
      leaseMs: LEASE_MS,
      httpDeadlineMs: HTTP_DEADLINE_MS,
      limit: 100,
    });
    if (reclaimed.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(Date.now() >= leaseEndMs, "nothing was claimable before the dead worker's lease ended");
  const byId = new Map(leases.map((l) => [l.deliveryId, l]));
  assert.deepEqual(
    reclaimed.map((c) => c.deliveryId).sort(),
    [...byId.keys()].sort(),
    "the same delivery ids, none lost",
  );
  for (const c of reclaimed) {
    assert.equal(c.previousOwner, "doomed");
    assert.equal(c.leaseVersion, BigInt(byId.get(c.deliveryId)!.leaseVersion) + 1n);
  }
  const deadLeases: DeliveryLease[] = leases.map((l) => ({
    deliveryId: l.deliveryId,
    leaseVersion: BigInt(l.leaseVersion),
    workerId: "doomed",
    leaseExpiresAtMs: l.leaseExpiresAtMs,
  }));
  const success = { state: "succeeded" as const };
  const result = (lease: DeliveryLease) => ({
    lease,
    startedAtMs: Date.now(),
    durationMs: 3,
    responseClass: "2xx",
    status: 200,
    next: success,
  });
  const late = await recordAttempts(db, deadLeases.map(result), Date.now());
  assert.ok(
    late.every((w) => !w.won),
    "every late write of the dead worker loses",
  );
  assert.equal(
    await finishWithoutAttempt(db, deadLeases[0]!, { state: "cancelled", reason: "late", nowMs: Date.now() }),
    false,
  );
  const current = await recordAttempts(db, reclaimed.map(result), Date.now());
  assert.ok(
    current.every((w) => w.won && w.attemptNo === 1),
    "the survivor's writes win, as attempt 1",
  );
  const { rows } = await db.query<{ worker_id: string; n: bigint }>(
    "SELECT worker_id, count(*) AS n FROM attempts GROUP BY worker_id",
  );
  assert.deepEqual(rows, [{ worker_id: "survivor", n: BigInt(DELIVERIES) }]);
});
