/**
 * Retention on both engines: WH-22 (payloads deleted after their 24 h, attempts and the
 * delivery history kept, aggregate counters outliving attempt rows, replay refused with a
 * clear error), WH-23 (an endpoint down for two days under a 24 h policy ends in a
 * visible final state), WH-24 (oldest queued age and state counts per tenant), bounded
 * sweeps. Time is a manual clock.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { backoffDelayMs } from "@casebook/kit/backoff";
import { contractSuite } from "@casebook/lab/contract-suite";
import { deliveryCountsByTenant, oldestQueuedAgeByTenant } from "../src/store/delivery-metrics.ts";
import { getDelivery, listAttempts, listDeliveries, replayDelivery } from "../src/store/delivery-queries.ts";
import { recordAttempt } from "../src/store/delivery-results.ts";
import { getEvent } from "../src/store/event-repository.ts";
import { attemptStats } from "../src/store/retention.ts";
import { loadForSend } from "../src/store/send-check.ts";
import { RetentionSweeper } from "../src/workers/retention-sweeper.ts";
import { storeBackends } from "./store-backends.ts";
import {
  claim,
  DAY_MS,
  HOUR_MS,
  ingest,
  newWorld,
  relayAll,
  seedSubscription,
  seedTenant,
  storeError,
  type World,
} from "./store-fixture.ts";

function sweeper(
  w: World,
  options: { maxBatch?: number; maxBatchesPerRound?: number } = {},
): RetentionSweeper {
  return new RetentionSweeper(w.db, {
    clock: w.clock,
    onError: (err) => assert.fail(String(err)),
    ...options,
  });
}

/** Claims the tenant's due deliveries and records one attempt each with `status`, retrying per WH-17 (base 2 s). */
async function attemptAll(w: World, tenantId: string, status: number, capMs = 300_000): Promise<number> {
  const claimed = await claim(w, tenantId);
  for (const c of claimed) {
    const next =
      status < 300
        ? { state: "succeeded" as const }
        : {
            state: "pending" as const,
            nextAttemptAtMs: w.clock.nowMs() + backoffDelayMs(c.attempts + 1, 2_000, capMs),
          };
    const result = {
      lease: c,
      startedAtMs: w.clock.nowMs(),
      durationMs: 30,
      responseClass: `${Math.floor(status / 100)}xx`,
      status,
      next,
    };
    await recordAttempt(w.db, result, w.clock.nowMs());
  }
  return claimed.length;
}

contractSuite("webhook retention", storeBackends("wh_retention"), (it) => {
  it("WH-22 after 24 h the payload is gone, the history stays, and replay is refused with a clear error", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    await seedSubscription(w, t.id);
    const { eventId } = await ingest(w, t.id, { idempotencyKey: "k", payload: { card: "4242" } });
    await relayAll(w);
    await attemptAll(w, t.id, 503);
    w.clock.advance(2_000);
    await attemptAll(w, t.id, 200);
    const deliveryId = (await listDeliveries(db, t.id)).items[0]!.id;
    w.clock.advance(DAY_MS - 2_000 - 1);
    await sweeper(w).runOnce();
    assert.deepEqual(
      (await getEvent(db, t.id, eventId))?.payload,
      { card: "4242" },
      "not a millisecond early",
    );
    w.clock.advance(1);
    const round = await sweeper(w).runOnce();
    assert.ok(round.payloadsDeleted >= 1);
    const event = await getEvent(db, t.id, eventId);
    assert.equal(event?.payload, null);
    assert.equal(event?.type, "invoice.paid", "the event row, its type and size stay");
    assert.equal((await listAttempts(db, t.id, deliveryId))?.items.length, 2, "attempts are kept");
    assert.equal((await getDelivery(db, t.id, deliveryId))?.state, "succeeded");
    await assert.rejects(
      replayDelivery(db, t.id, deliveryId, { nowMs: w.clock.nowMs() }),
      storeError("WEBHOOK_REPLAY_PAYLOAD_EXPIRED"),
    );
    const retried = await ingest(w, t.id, { idempotencyKey: "k", payload: { card: "4242" } });
    assert.deepEqual([retried.eventId, retried.created], [eventId, false], "the key is still recognised");
    await assert.rejects(
      ingest(w, t.id, { idempotencyKey: "k", payload: { card: "0000" } }),
      storeError("WEBHOOK_IDEMPOTENCY_CONFLICT"),
    );
  });

  it("WH-22 attempts past their retention are folded into per-day counters, which outlive them", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w, { attemptRetentionS: 3_600 });
    await seedSubscription(w, t.id);
    for (let i = 0; i < 3; i++) await ingest(w, t.id);
    await relayAll(w);
    await attemptAll(w, t.id, 500);
    w.clock.advance(2_000);
    await attemptAll(w, t.id, 200);
    w.clock.advance(HOUR_MS + 1);
    await sweeper(w).runOnce();
    const { rows } = await db.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM attempts WHERE tenant_id = $1",
      [t.id],
    );
    assert.equal(rows[0]!.n, 0n);
    assert.deepEqual(
      (await attemptStats(db, t.id)).map((s) => [s.day, s.responseClass, s.attempts, s.durationMsSum]),
      [
        ["2025-01-01", "2xx", 3n, 90n],
        ["2025-01-01", "5xx", 3n, 90n],
      ],
    );
    const counts = (await deliveryCountsByTenant(db)).filter((c) => c.tenantId === t.id);
    assert.deepEqual(
      counts.map((c) => [c.state, c.count]),
      [["succeeded", 3n]],
      "delivery states stay countable",
    );
  });

  it("WH-23 an endpoint down for two days under a 24 h policy ends `expired`, and no attempt starts past the deadline", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    await seedSubscription(w, t.id);
    await seedSubscription(w, t.id, { eventTypes: ["never.sent"] });
    await ingest(w, t.id);
    const { eventId: lateEvent } = await ingest(w, t.id, { type: "never.sent" });
    await relayAll(w);
    await db.query("UPDATE deliveries SET next_attempt_at = $2 WHERE event_id = $1", [
      lateEvent,
      new Date(w.clock.nowMs() + 3 * DAY_MS),
    ]);
    // The endpoint answers 503 for two days. The clock jumps from one due time to the next;
    // a 1 h cap (instead of 300 s) keeps the run to a few dozen attempts without changing the end.
    const outageEndMs = w.clock.nowMs() + 2 * DAY_MS;
    for (let step = 0; step < 200 && w.clock.nowMs() < outageEndMs; step++) {
      await attemptAll(w, t.id, 503, HOUR_MS);
      const { rows } = await db.query<{ due: Date | null }>(
        "SELECT min(next_attempt_at) AS due FROM deliveries WHERE tenant_id = $1 AND state = 'pending' AND event_id <> $2",
        [t.id, lateEvent],
      );
      if (rows[0]!.due === null) break;
      w.clock.advance(Math.max(0, rows[0]!.due.getTime() - w.clock.nowMs()));
    }
    const all = (await listDeliveries(db, t.id)).items;
    const down = all.find((d) => d.eventId !== lateEvent)!;
    assert.equal(down.state, "expired");
    assert.equal(down.stateReason, "deadline");
    assert.ok(down.attempts > 20, `retried across the whole window: ${down.attempts} attempts`);
    const last = (await listAttempts(db, t.id, down.id, { limit: 100, cursor: undefined }))!;
    assert.ok(last.items.every((a) => a.startedAt.getTime() < down.deadlineAt.getTime()));
    w.clock.advance(2 * DAY_MS);
    await sweeper(w).runOnce();
    const never = (await listDeliveries(db, t.id, { eventId: lateEvent })).items[0]!;
    assert.deepEqual(
      [never.state, never.attempts],
      ["expired", 0],
      "never attempted, still a visible final state",
    );
  });

  it("the sweeper leaves a delivery under a live lease to its worker", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w, { deliveryWindowS: 60 });
    await seedSubscription(w, t.id);
    await ingest(w, t.id);
    await relayAll(w);
    const [c] = await claim(w, t.id, { leaseMs: 120_000 });
    w.clock.advance(61_000);
    await sweeper(w).runOnce();
    assert.equal((await getDelivery(db, t.id, c!.deliveryId))?.state, "in_flight");
    assert.deepEqual(await loadForSend(db, c!, w.clock.nowMs()), {
      send: false,
      reason: "deadline_passed",
      settled: true,
    });
  });

  it("WH-24 oldest queued age and counts per state, per tenant", async (db: Database) => {
    const w = newWorld(db);
    const busy = await seedTenant(w);
    const idle = await seedTenant(w);
    await seedSubscription(w, busy.id);
    await ingest(w, busy.id);
    await relayAll(w);
    w.clock.advance(5_000);
    await ingest(w, busy.id);
    await relayAll(w);
    w.clock.advance(7_000);
    const ages = await oldestQueuedAgeByTenant(db, w.clock.nowMs());
    assert.deepEqual(
      ages.find((a) => a.tenantId === busy.id),
      { tenantId: busy.id, ageMs: 12_000, queued: true },
    );
    assert.deepEqual(
      ages.find((a) => a.tenantId === idle.id),
      { tenantId: idle.id, ageMs: 0, queued: false },
    );
    await attemptAll(w, busy.id, 200);
    const counts = (await deliveryCountsByTenant(db)).filter((c) => c.tenantId === busy.id);
    assert.deepEqual(
      counts.map((c) => [c.state, c.count]),
      [["succeeded", 2n]],
    );
  });

  it("sweeps are bounded: maxBatch rows per statement, maxBatchesPerRound statements per round", async (db: Database) => {
    const w = newWorld(db, Date.UTC(2030, 0, 1));
    await sweeper(w, { maxBatch: 1_000, maxBatchesPerRound: 100 }).runOnce(); // what earlier tests left
    const t = await seedTenant(w);
    for (let i = 0; i < 7; i++) await ingest(w, t.id);
    await relayAll(w);
    w.clock.advance(2 * DAY_MS);
    const bounded = sweeper(w, { maxBatch: 3, maxBatchesPerRound: 2 });
    const first = await bounded.runOnce();
    assert.equal(first.payloadsDeleted, 6);
    assert.equal(first.outboxDeleted, 6, "published outbox rows older than a day");
    const second = await bounded.runOnce();
    assert.deepEqual([second.payloadsDeleted, second.outboxDeleted], [1, 1]);
    assert.deepEqual(await bounded.runOnce(), {
      payloadsDeleted: 0,
      deliveriesExpired: 0,
      attemptsRolledUp: 0,
      outboxDeleted: 0,
    });
  });
});
