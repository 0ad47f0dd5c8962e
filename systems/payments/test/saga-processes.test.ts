/**
 * Orchestrator PROCESSES on the real PostgreSQL against the real acquirer simulator:
 * - crash: a child is SIGKILLed while its authorize call hangs (charged, response held); another
 *   child resumes the saga after the lease, asks the acquirer by key, and captures: exactly one
 *   authorization call, one capture, a consistent ledger (PY-05, PY-06);
 * - race: 3 children on 50 sagas: each saga completes exactly once (one final event), and the
 *   acquirer saw exactly one authorization call per key (SKIP LOCKED + lease + version CAS).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { type ChildProcessWithPipes, spawnChild } from "@casebook/lab/spawn-child";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { startSim } from "./acquirer-sim-fixture.ts";
import { balances, openTestDb, seedPayment, waitFor } from "./payment-fixture.ts";

const CHILD = fileURLToPath(new URL("./saga-orchestrator-child.ts", import.meta.url));
type Child = ChildProcessWithPipes;

/** Spawns an orchestrator process and resolves once it printed "ready". */
/** An orchestrator process, ready; it starts on "go" (at once unless `hold`: the caller sends it). */
async function spawnOrchestrator(args: string[], children: Child[], hold = false): Promise<Child> {
  const child = (await spawnChild(CHILD, { args, readyTimeoutMs: 20_000 })).process;
  children.push(child);
  if (!hold) child.stdin.write("go\n");
  return child;
}

function killAll(children: Child[]): void {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

async function eventsTable(db: import("@casebook/infra/sql/sql").Database): Promise<void> {
  await db.exec(
    "CREATE TABLE test_events (payment_id text NOT NULL, owner text NOT NULL, type text NOT NULL)",
  );
}

test("PY-05 PY-06 an orchestrator killed mid-call is resumed by another after its lease: one charge, consistent ledger", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const children: Child[] = [];
  t.after(() => killAll(children));
  const { db, schema } = await openTestDb(t, url);
  await eventsTable(db);
  const sim = await startSim(t, {
    behaviour: { timeoutAfterChargeRate: 1, timeoutMode: "hang", hangMs: 60_000 },
  });
  const idempotency = paymentsIdempotencyStore(db);
  const merchant = uniqueName("m");
  const id = await seedPayment(db, idempotency, { merchant, key: "crash-1", amountMinor: 7_000n });
  const a = await spawnOrchestrator([url, schema!, sim.url, "owner-a", "3000"], children);
  // The acquirer has charged and is holding the response: kill the owner now, mid-call.
  await waitFor(async () => (sim.sim.state.stats().authorizations === 1 ? true : undefined), 15_000, 5);
  a.kill("SIGKILL");
  sim.sim.faults.update({ timeoutAfterChargeRate: 0 });
  const before = await db.query<{ step: string; lease_owner: string }>(
    "SELECT step, lease_owner FROM payments WHERE id = $1",
    [id],
  );
  assert.equal(before.rows[0]!.step, "authorize");
  assert.equal(before.rows[0]!.lease_owner, "owner-a");
  await spawnOrchestrator([url, schema!, sim.url, "owner-b", "3000"], children);
  const done = await waitFor(async () => {
    const { rows } = await db.query<{ status: string }>(
      "SELECT status FROM payments WHERE id = $1 AND step = 'done'",
      [id],
    );
    return rows[0];
  }, 30_000);
  assert.equal(done.status, "captured");
  const auth = sim.sim.state.getByKey(`${merchant}:crash-1`);
  assert.equal(auth.attempts, 1, "the resumer asked by key instead of authorizing again");
  assert.equal(sim.sim.state.stats().captures, 1);
  // Events name a payment by its public id (013_opaque_ids), the id the API shows.
  const events = await db.query<{ owner: string }>(
    "SELECT owner FROM test_events WHERE payment_id = (SELECT public_id FROM payments WHERE id = $1)",
    [id],
  );
  assert.deepEqual(
    events.rows.map((r) => r.owner),
    ["owner-b"],
  );
  const b = await balances(db, merchant);
  assert.equal(b.merchant_pending!.posted, 7_000n);
  assert.equal(b.merchant_pending!.pending_credits, 0n);
  assert.equal(b.customer_funds!.posted, -7_000n);
  assert.equal((await idempotency.find(merchant, "crash-1"))?.status, "completed");
});

test("PY-05 3 orchestrator processes racing on 50 sagas: each completes once, one authorization call per key", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const children: Child[] = [];
  t.after(() => killAll(children));
  const { db, schema } = await openTestDb(t, url);
  await eventsTable(db);
  const sim = await startSim(t, { behaviour: { declineRate: 0.2 } });
  const idempotency = paymentsIdempotencyStore(db);
  const merchant = uniqueName("m");
  const SAGAS = 50;
  for (let i = 0; i < SAGAS; i++)
    await seedPayment(db, idempotency, { merchant, key: `race-${i}`, amountMinor: 100n + BigInt(i) });
  await Promise.all(
    ["p1", "p2", "p3"].map((owner) =>
      spawnOrchestrator([url, schema!, sim.url, owner, "2000"], children, true),
    ),
  );
  for (const child of children) child.stdin.write("go\n"); // all ready: they start together
  await waitFor(
    async () => {
      const { rows } = await db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM payments WHERE step <> 'done'",
      );
      return rows[0]!.n === 0n ? true : undefined;
    },
    20_000,
    50,
  ).catch(async (error) => {
    const { rows } = await db.query(
      "SELECT step, status, attempts, lease_owner, count(*) AS n FROM payments GROUP BY 1, 2, 3, 4",
    );
    throw new Error(
      `sagas left: ${JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
      { cause: error },
    );
  });
  for (const child of children) child.stdin.write("stop\n");
  const events = await db.query<{ payment_id: string; n: bigint }>(
    "SELECT payment_id, count(*) AS n FROM test_events GROUP BY payment_id",
  );
  assert.equal(events.rows.length, SAGAS);
  assert.ok(
    events.rows.every((r) => r.n === 1n),
    "every saga finished exactly once",
  );
  const owners = await db.query<{ owner: string }>("SELECT DISTINCT owner FROM test_events");
  assert.ok(owners.rows.length >= 2, "the work was shared between processes");
  const stats = sim.sim.state.stats();
  assert.equal(stats.authorizations, SAGAS);
  assert.equal(stats.authorizationAttempts, SAGAS, "no key was authorized twice");
  const { rows } = await db.query<{ status: string; n: bigint; total: bigint }>(
    "SELECT status, count(*) AS n, sum(amount_minor)::int8 AS total FROM payments GROUP BY status",
  );
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r]));
  assert.equal((byStatus.captured?.n ?? 0n) + (byStatus.declined?.n ?? 0n), BigInt(SAGAS));
  assert.equal(BigInt(stats.captures), byStatus.captured?.n ?? 0n);
  const b = await balances(db, merchant);
  assert.equal(b.merchant_pending!.posted, byStatus.captured?.total ?? 0n);
  assert.equal(b.merchant_pending!.pending_credits, 0n);
});
