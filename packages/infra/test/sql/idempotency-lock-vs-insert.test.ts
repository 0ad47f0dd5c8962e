/**
 * PY-03: why idempotency is a durable conditional write and not a lock with a TTL.
 * The same timeline is played against a naive expiring lock (written here, in SQL, the
 * way it is usually written: acquire if absent or expired, release only if still the
 * owner) and against the idempotency store. Time moves by `nowMs`, never by sleeping;
 * the "slow holder" is a holder that keeps running past a deadline it cannot see.
 */
import assert from "node:assert/strict";
import { fingerprintRequest, type StoredResponse } from "@casebook/kit/idempotency";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { IdempotencyLease } from "../../src/sql/idempotency-store.ts";
import type { Queryable } from "../../src/sql/sql.ts";
import {
  type IdempotencySubject,
  idempotencyBackends,
  idempotencyErrors,
  idempotencyStore,
} from "./idempotency-backends.ts";

const T0 = Date.UTC(2026, 9, 22, 12, 0, 0);
const LOCK_TTL_MS = 10_000;
const LEASE_MS = 60_000;
const PAY = fingerprintRequest({ method: "POST", path: "/payments", body: { amount: "5000" } });
const CREATED: StoredResponse = { status: 201, headers: {}, body: new TextEncoder().encode('{"id":"p_1"}') };

/** The lock people reach for: a row with an expiry, taken when absent or expired. */
const naiveLock = {
  async setUp(q: Queryable): Promise<void> {
    await q.exec(
      "CREATE TABLE IF NOT EXISTS naive_locks (name text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)",
    );
  },
  async acquire(q: Queryable, name: string, owner: string, nowMs: number): Promise<boolean> {
    const { rows } = await q.query(
      `INSERT INTO naive_locks AS l VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE
         SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at WHERE l.expires_at <= $4 RETURNING owner`,
      [name, owner, new Date(nowMs + LOCK_TTL_MS), new Date(nowMs)],
    );
    return rows.length === 1;
  },
  /** The "safe" release (only the owner's own lock): it still cannot undo what the owner did after expiry. */
  async release(q: Queryable, name: string, owner: string): Promise<boolean> {
    return (
      (await q.query("DELETE FROM naive_locks WHERE name = $1 AND owner = $2", [name, owner])).rowCount === 1
    );
  },
};

async function charge(q: Queryable, merchantId: string, key: string, by: string): Promise<void> {
  await q.query("INSERT INTO caller_effects VALUES ($1, $2, $3)", [merchantId, key, by]);
}

async function charges(q: Queryable, merchantId: string): Promise<string[]> {
  const { rows } = await q.query<{ note: string }>(
    "SELECT note FROM caller_effects WHERE merchant_id = $1 ORDER BY note",
    [merchantId],
  );
  return rows.map((r) => r.note);
}

async function outcome(promise: Promise<{ kind: string }>): Promise<string> {
  try {
    return (await promise).kind;
  } catch (err) {
    if (!idempotencyErrors.is(err)) throw err;
    return err.code;
  }
}

contractSuite<IdempotencySubject>("PY-03 lock with a TTL vs conditional write", idempotencyBackends, (it) => {
  it("PY-03 a naive lock expires while its slow holder runs: a retry gets in and the payment is charged twice", async (s) => {
    await naiveLock.setUp(s.db);
    const merchantId = s.merchant("naive");
    const name = `${merchantId}/k1`;
    assert.equal(await naiveLock.acquire(s.db, name, "attempt-1", T0), true);
    // attempt-1 is slow (a GC pause, a slow acquirer); the client times out and retries.
    assert.equal(
      await naiveLock.acquire(s.db, name, "attempt-2", T0 + 5_000),
      false,
      "excluded while the lock lives",
    );
    assert.equal(
      await naiveLock.acquire(s.db, name, "attempt-2", T0 + LOCK_TTL_MS),
      true,
      "the lock expired",
    );
    await charge(s.db, merchantId, "k1", "attempt-2");
    await charge(s.db, merchantId, "k1", "attempt-1"); // attempt-1 never learnt it lost the lock
    assert.equal(await naiveLock.release(s.db, name, "attempt-1"), false, "too late to matter");
    assert.deepEqual(await charges(s.db, merchantId), ["attempt-1", "attempt-2"]);
  });

  it("PY-03 the conditional write does not expire while its owner works: nobody else gets in", async (s) => {
    const merchantId = s.merchant("durable");
    const store = idempotencyStore(s.db, { leaseS: LEASE_MS / 1000 });
    const begun = await store.begin({ scope: merchantId, key: "k2", fingerprint: PAY, nowMs: T0 });
    assert.equal(begun.kind, "started");
    let lease = (begun as { lease: IdempotencyLease }).lease;
    // Five minutes of work, 30 times the naive lock's TTL; each committed step renews the lease.
    const steps = [
      "ledger_reserved",
      "acquirer_called",
      "acquirer_retried",
      "acquirer_queried",
      "ledger_posted",
    ];
    for (const [i, step] of steps.entries()) {
      const stepMs = T0 + (i + 1) * 50_000;
      const retry = store.begin({ scope: merchantId, key: "k2", fingerprint: PAY, nowMs: stepMs - 1 });
      assert.equal(await outcome(retry), "TEST_IDEMPOTENCY_IN_PROGRESS", `retry at step ${step}`);
      lease = await s.db.transaction((tx) => store.advance(tx, lease, step, stepMs));
    }
    await s.db.transaction(async (tx) => {
      await charge(tx, merchantId, "k2", "attempt-1");
      await store.complete(tx, lease, CREATED, T0 + 300_000);
    });
    const retry = await store.begin({ scope: merchantId, key: "k2", fingerprint: PAY, nowMs: T0 + 300_001 });
    assert.deepEqual(retry, { kind: "replay", response: CREATED });
    assert.deepEqual(await charges(s.db, merchantId), ["attempt-1"]);
  });

  it("PY-03 a take-over happens only after the lease, and the fencing token keeps the charge single", async (s) => {
    const merchantId = s.merchant("fenced");
    const store = idempotencyStore(s.db, { leaseS: LEASE_MS / 1000 });
    const first = await store.begin({ scope: merchantId, key: "k3", fingerprint: PAY, nowMs: T0 });
    assert.equal(first.kind, "started");
    const slow = (first as { lease: IdempotencyLease }).lease;
    const early = store.begin({ scope: merchantId, key: "k3", fingerprint: PAY, nowMs: T0 + LEASE_MS - 1 });
    assert.equal(await outcome(early), "TEST_IDEMPOTENCY_IN_PROGRESS");
    // The owner has been silent for a whole lease: it looks crashed, but it is only slow.
    const second = await store.begin({
      scope: merchantId,
      key: "k3",
      fingerprint: PAY,
      nowMs: T0 + LEASE_MS,
    });
    assert.equal(second.kind, "started");
    const retry = (second as { lease: IdempotencyLease }).lease;
    // Unlike the naive lock, the slow owner's charge is fenced: its transaction rolls back.
    const stale = s.db.transaction(async (tx) => {
      await charge(tx, merchantId, "k3", "attempt-1");
      await store.complete(tx, slow, CREATED, T0 + LEASE_MS + 1);
    });
    assert.equal(await outcome(stale.then(() => ({ kind: "committed" }))), "TEST_IDEMPOTENCY_LOCK_LOST");
    await s.db.transaction(async (tx) => {
      await charge(tx, merchantId, "k3", "attempt-2");
      await store.complete(tx, retry, CREATED, T0 + LEASE_MS + 2);
    });
    assert.deepEqual(await charges(s.db, merchantId), ["attempt-2"]);
  });

  it("PY-03 a take-over by read-then-write lets every racer in; the compare-and-set lets one", async (s) => {
    const merchantId = s.merchant("cas");
    const store = idempotencyStore(s.db, { leaseS: LEASE_MS / 1000 });
    const racers = 4;
    for (const key of ["naive", "cas"]) {
      assert.equal(
        (await store.begin({ scope: merchantId, key, fingerprint: PAY, nowMs: T0 })).kind,
        "started",
      );
    }
    const nowMs = T0 + LEASE_MS;
    // Read-then-write: every racer reads the expired lease before any writes (the barrier), then all take it.
    const read = "SELECT locked_at FROM idempotency_keys WHERE merchant_id = $1 AND key = 'naive'";
    const seen = await Promise.all(
      Array.from({ length: racers }, () => s.db.query<{ locked_at: Date }>(read, [merchantId])),
    );
    const expired = seen.filter((r) => r.rows[0]!.locked_at.getTime() + LEASE_MS <= nowMs);
    const blind = "UPDATE idempotency_keys SET locked_at = $2 WHERE merchant_id = $1 AND key = 'naive'";
    const taken = await Promise.all(expired.map(() => s.db.query(blind, [merchantId, new Date(nowMs)])));
    assert.equal(
      taken.filter((r) => r.rowCount === 1).length,
      racers,
      "every racer believes it owns the key",
    );
    const raced = Array.from({ length: racers }, () =>
      outcome(store.begin({ scope: merchantId, key: "cas", fingerprint: PAY, nowMs })),
    );
    const outcomes = await Promise.all(raced);
    assert.equal(outcomes.filter((o) => o === "started").length, 1);
  });
});
