/**
 * The store pieces the delivery worker added, on both engines (PGlite and PostgreSQL):
 *
 * - loadForSendBatch gives the same answer as loadForSend on every case — send,
 *   subscription inactive (WH-04), deadline passed and payload deleted (WH-18), lease
 *   lost by version or by time — and settles the same way;
 * - delivery-deferral.ts: a CAS on the lease like every worker write; a deferral to the
 *   deadline or later ends the delivery as expired (WH-20 deferrals never outlive it);
 * - endpoint-limits.ts reads the scheduler's per-endpoint limits.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { ClaimedDelivery } from "../src/store/delivery-claims.ts";
import { deferDeliveries } from "../src/store/delivery-deferral.ts";
import { endpointLimits } from "../src/store/endpoint-limits.ts";
import { loadForSend, loadForSendBatch, type SendPlan } from "../src/store/send-check.ts";

import { setSubscriptionActive } from "../src/store/subscription-repository.ts";
import { storeBackends } from "./store-backends.ts";
import {
  claim,
  DAY_MS,
  deliveryRow,
  ingest,
  LEASE_MS,
  newWorld,
  relayAll,
  seedSubscription,
  seedTenant,
  type World,
} from "./store-fixture.ts";

interface Pair {
  w: World;
  tenantId: string;
  subscriptionId: string;
  /** Two deliveries in the same situation: one for loadForSend, one for the batch. */
  single: ClaimedDelivery;
  batched: ClaimedDelivery;
}

async function pair(db: Database): Promise<Pair> {
  const w = newWorld(db);
  const tenant = await seedTenant(w);
  const sub = await seedSubscription(w, tenant.id, { rateLimitPerS: 20, maxConcurrency: 7 });
  await ingest(w, tenant.id, { payload: { n: 1 } });
  await ingest(w, tenant.id, { payload: { n: 2 } });
  await relayAll(w);
  const [single, batched] = await claim(w, tenant.id);
  assert.ok(single && batched);
  return { w, tenantId: tenant.id, subscriptionId: sub.id, single, batched };
}

/** A plan without what differs between the two deliveries of a pair by construction. */
function shape(plan: SendPlan): unknown {
  if (!plan.send) return plan;
  const { lease: _lease, eventId: _eventId, payload: _payload, ...rest } = plan;
  return rest;
}

async function bothWays(p: Pair): Promise<void> {
  const nowMs = p.w.clock.nowMs();
  const one = await loadForSend(p.w.db, p.single, nowMs);
  const [many] = await loadForSendBatch(p.w.db, [p.batched], nowMs);
  assert.deepEqual(shape(many!), shape(one), "the batch answers what loadForSend answers");
  const [a, b] = [
    await deliveryRow(p.w.db, p.single.deliveryId),
    await deliveryRow(p.w.db, p.batched.deliveryId),
  ];
  assert.deepEqual(
    [b.state, b.state_reason, b.attempts],
    [a.state, a.state_reason, a.attempts],
    "and settles alike",
  );
}

contractSuite(
  "worker store: batched send check, deferral, endpoint limits",
  storeBackends("wh_worker_store"),
  (it) => {
    it("WH-04 loadForSendBatch agrees with loadForSend: a live lease on an active subscription → send, with everything", async (db) => {
      const p = await pair(db);
      const [plan] = await loadForSendBatch(db, [p.batched], p.w.clock.nowMs());
      assert.ok(plan?.send);
      assert.equal(plan.attemptNo, 1);
      assert.equal(plan.maxConcurrency, 7);
      assert.equal(plan.secrets.length, 1);
      assert.deepEqual(plan.payload, { n: 2 });
      await bothWays(p);
    });

    it("WH-04 loadForSendBatch agrees: subscription deactivated after queueing → cancelled, nothing to send", async (db) => {
      const p = await pair(db);
      await setSubscriptionActive(db, p.tenantId, p.subscriptionId, {
        active: false,
        reason: "paused",
        nowMs: p.w.clock.nowMs(),
      });
      await bothWays(p);
      assert.equal((await deliveryRow(db, p.batched.deliveryId)).state, "cancelled");
    });

    it("WH-18 loadForSendBatch agrees: past the deadline → expired; payload deleted → expired", async (db) => {
      const late = await pair(db);
      late.w.clock.advance(DAY_MS);
      // Past the lease too: re-claim so the lease is live and only the deadline speaks.
      await db.query(
        "UPDATE deliveries SET lease_expires_at = $2, next_attempt_at = $2 WHERE id = ANY($1::text[])",
        [[late.single.deliveryId, late.batched.deliveryId], new Date(late.w.clock.nowMs() + LEASE_MS)],
      );
      await bothWays(late);
      assert.equal((await deliveryRow(db, late.batched.deliveryId)).state, "expired");
      const gone = await pair(db);
      await db.query("UPDATE events SET payload = NULL WHERE tenant_id = $1", [gone.tenantId]);
      await bothWays(gone);
      assert.equal((await deliveryRow(db, gone.batched.deliveryId)).state_reason, "payload_expired");
    });

    it("WH-10 loadForSendBatch agrees: a lease lost by version or by time → lease_lost, nothing settled; order kept", async (db) => {
      const p = await pair(db);
      const stale = { ...p.batched, leaseVersion: p.batched.leaseVersion - 1n };
      const unknown = { ...p.batched, deliveryId: "dlv_00000000000000000000000000000000" };
      const plans = await loadForSendBatch(db, [stale, p.single, unknown], p.w.clock.nowMs());
      assert.deepEqual(
        plans.map((plan) => (plan.send ? "send" : plan.reason)),
        ["lease_lost", "send", "lease_lost"],
      );
      p.w.clock.advance(LEASE_MS);
      await bothWays(p);
      assert.equal(
        (await deliveryRow(db, p.batched.deliveryId)).state,
        "in_flight",
        "an expired lease settles nothing",
      );
    });

    it("WH-20 a deferral is a lease CAS: pending again at its time, no attempt; a stale lease changes nothing", async (db) => {
      const p = await pair(db);
      const nowMs = p.w.clock.nowMs();
      const writes = await deferDeliveries(
        db,
        [
          { lease: p.single, untilMs: nowMs + 5_000 },
          { lease: { ...p.batched, leaseVersion: p.batched.leaseVersion + 1n }, untilMs: nowMs + 5_000 },
        ],
        nowMs,
      );
      assert.deepEqual(
        writes.map((x) => [x.won, x.state]),
        [
          [true, "pending"],
          [false, null],
        ],
      );
      const row = await deliveryRow(db, p.single.deliveryId);
      assert.deepEqual(
        [row.state, row.attempts, row.lease_version],
        ["pending", 0, p.single.leaseVersion + 1n],
      );
      assert.equal((await claim(p.w, p.tenantId)).length, 0, "not due before its time");
      p.w.clock.advance(5_000);
      assert.deepEqual(
        (await claim(p.w, p.tenantId, { workerId: "w2" })).map((c) => c.deliveryId),
        [p.single.deliveryId],
      );
    });

    it("WH-23 a deferral reaching the deadline ends the delivery as expired (deadline) at once", async (db) => {
      const p = await pair(db);
      const [write] = await deferDeliveries(
        db,
        [{ lease: p.single, untilMs: p.single.deadlineAtMs }],
        p.w.clock.nowMs(),
      );
      assert.deepEqual([write!.won, write!.state], [true, "expired"]);
      const row = await deliveryRow(db, p.single.deliveryId);
      assert.deepEqual([row.state, row.state_reason], ["expired", "deadline"]);
      await assert.rejects(
        deferDeliveries(
          db,
          [
            { lease: p.batched, untilMs: 1 },
            { lease: p.batched, untilMs: 2 },
          ],
          0,
        ),
        RangeError,
      );
    });

    it("WH-15 endpoint limits: concurrency and rate of known subscriptions, unknown ids absent", async (db) => {
      const p = await pair(db);
      const limits = await endpointLimits(db, [
        p.subscriptionId,
        "sub_00000000000000000000000000000000",
        p.subscriptionId,
      ]);
      assert.deepEqual([...limits], [[p.subscriptionId, { maxConcurrency: 7, rateLimitPerS: 20 }]]);
      assert.deepEqual([...(await endpointLimits(db, []))], []);
    });
  },
);
