/**
 * The transactional outbox, the relay and the dispatcher's fan-out on both engines:
 * WH-07 (event iff the producer's transaction commits; one delivery per matching
 * subscription), WH-09 (publishing twice still yields one delivery per subscription),
 * WH-14 (a relay crashing between publish and mark publishes again — harmlessly).
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { filtersSelect } from "../src/domain/store-event-type.ts";
import { enqueue } from "../src/store/event-repository.ts";
import { fanOut } from "../src/store/fan-out.ts";
import { webhookOutbox } from "../src/store/outbox.ts";
import { setSubscriptionActive } from "../src/store/subscription-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { type EventPublisher, OutboxRelay, type PublishedEvent } from "../src/workers/outbox-relay.ts";
import { storeBackends } from "./store-backends.ts";
import {
  HOUR_MS,
  ingest,
  newWorld,
  relayAll,
  seedSubscription,
  seedTenant,
  type World,
} from "./store-fixture.ts";

async function deliveriesOf(db: Database, eventId: string): Promise<{ subscription_id: string }[]> {
  const { rows } = await db.query<{ subscription_id: string }>(
    "SELECT subscription_id FROM deliveries WHERE event_id = $1 ORDER BY subscription_id",
    [eventId],
  );
  return rows;
}

function relay(
  w: World,
  publisher: EventPublisher,
  options: { leaseMs?: number; publishTimeoutMs?: number } = {},
) {
  return new OutboxRelay(w.db, {
    publisher,
    clock: w.clock,
    owner: "relay-under-test",
    leaseMs: options.leaseMs ?? 30_000,
    publishTimeoutMs: options.publishTimeoutMs ?? 10_000,
    retryBaseMs: 1_000,
    retryCapMs: 60_000,
    onError: () => {},
  });
}

/** Outbox claims are global: rows other tests left unpublished are marked so each test relays only its own. */
async function settleLeftovers(db: Database): Promise<void> {
  await db.query(
    "UPDATE outbox SET published_at = created_at, lease_owner = NULL, lease_expires_at = NULL WHERE published_at IS NULL",
  );
}

contractSuite("webhook outbox, relay and fan-out", storeBackends("wh_outbox"), (it) => {
  it("WH-07 the producer's rollback leaves no event and no outbox row; its commit leaves both, fanned out once", async (db: Database) => {
    await settleLeftovers(db);
    const w = newWorld(db);
    const t = await seedTenant(w);
    const sub = await seedSubscription(w, t.id);
    await db.exec("CREATE TABLE IF NOT EXISTS test_orders (id text PRIMARY KEY)");
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO test_orders (id) VALUES ($1)", [`${t.id}-rolled-back`]);
        await enqueue(tx, t.id, { type: "order.paid", payload: { order: "rolled-back" } }, w.ctx());
        throw new Error("the business change failed after the enqueue");
      }),
      /business change failed/,
    );
    const none = await db.query("SELECT 1 FROM events WHERE tenant_id = $1", [t.id]);
    assert.equal(none.rowCount, 0, "no phantom event");
    const { eventId } = await db.transaction(async (tx) => {
      await tx.query("INSERT INTO test_orders (id) VALUES ($1)", [`${t.id}-committed`]);
      return enqueue(tx, t.id, { type: "order.paid", payload: { order: "committed" } }, w.ctx());
    });
    const queued = await db.query("SELECT 1 FROM outbox WHERE event_id = $1 AND published_at IS NULL", [
      eventId,
    ]);
    assert.equal(queued.rowCount, 1);
    await relayAll(w);
    assert.deepEqual(await deliveriesOf(db, eventId), [{ subscription_id: sub.id }]);
    const published = await db.query(
      "SELECT 1 FROM outbox WHERE event_id = $1 AND published_at IS NOT NULL",
      [eventId],
    );
    assert.equal(published.rowCount, 1);
  });

  it("WH-09 publishing one event twice still yields one delivery per matching subscription", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const a = await seedSubscription(w, t.id, { eventTypes: ["invoice.*"] });
    const b = await seedSubscription(w, t.id);
    await seedSubscription(w, t.id, { eventTypes: ["user.created"] });
    const off = await seedSubscription(w, t.id);
    await setSubscriptionActive(db, t.id, off.id, {
      active: false,
      reason: "paused",
      nowMs: w.clock.nowMs(),
    });
    const { eventId } = await ingest(w, t.id, { type: "invoice.paid" });
    const dispatcher = new Dispatcher(db, { clock: w.clock });
    await dispatcher.publish({ eventId, tenantId: t.id, publishCount: 1 });
    await dispatcher.publish({ eventId, tenantId: t.id, publishCount: 2 });
    assert.equal((await fanOut(db, { eventId, nowMs: w.clock.nowMs() })).created, 0);
    const expected = [a.id, b.id].sort().map((id) => ({ subscription_id: id }));
    assert.deepEqual(await deliveriesOf(db, eventId), expected);
    assert.deepEqual(dispatcher.stats, { events: 2, deliveriesCreated: 2, duplicatePublishes: 1 });
  });

  it("WH-14 a relay that dies between publish and mark: after its lease the event is published again, creating nothing", async (db: Database) => {
    await settleLeftovers(db);
    const w = newWorld(db);
    const t = await seedTenant(w);
    await seedSubscription(w, t.id);
    await seedSubscription(w, t.id);
    const { eventId } = await ingest(w, t.id);
    const dispatcher = new Dispatcher(db, { clock: w.clock });
    // The doomed relay: claims, publishes, and "crashes" before markPublished.
    const [claimed] = await webhookOutbox.claim(db, {
      owner: "doomed",
      nowMs: w.clock.nowMs(),
      leaseMs: 30_000,
      limit: 10,
    });
    assert.equal(claimed?.event?.eventId, eventId);
    await dispatcher.publish({ eventId, tenantId: t.id, publishCount: claimed!.event!.publishCount });
    const survivor = relay(w, dispatcher);
    assert.equal((await survivor.runOnce()).claimed, 0, "the lease still holds the row");
    w.clock.advance(30_000);
    assert.deepEqual(await survivor.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
    assert.equal((await deliveriesOf(db, eventId)).length, 2, "still one delivery per subscription");
    const { rows } = await db.query<{ publish_count: number }>(
      "SELECT publish_count FROM outbox WHERE event_id = $1",
      [eventId],
    );
    assert.equal(rows[0]!.publish_count, 2, "published twice, under the same event id");
    assert.equal(dispatcher.stats.duplicatePublishes, 1);
  });

  it("fan-out takes active subscriptions whose filters select the type (the SQL agrees with eventTypeMatches), created before the event", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w, { deliveryWindowS: 3_600 });
    const filters = [
      null,
      ["*"],
      ["invoice.*"],
      ["invoice.paid"],
      ["invoice.paid.late"],
      ["user.*", "invoice.paid"],
    ];
    const subs = [];
    for (const eventTypes of filters) subs.push(await seedSubscription(w, t.id, { eventTypes }));
    const types = ["invoice.paid", "invoice.line.created", "invoice", "user.created", "invoicex.paid"];
    const dispatcher = new Dispatcher(db, { clock: w.clock });
    for (const type of types) {
      const { eventId } = await ingest(w, t.id, { type });
      await dispatcher.publish({ eventId, tenantId: t.id, publishCount: 1 });
      const expected = subs
        .filter((s) => filtersSelect(s.eventTypes, type))
        .map((s) => s.id)
        .sort();
      assert.deepEqual(
        (await deliveriesOf(db, eventId)).map((r) => r.subscription_id),
        expected,
        type,
      );
    }
    const { eventId } = await ingest(w, t.id);
    w.clock.advance(1_000);
    const late = await seedSubscription(w, t.id); // registered after the event: a late publish must not add it
    await dispatcher.publish({ eventId, tenantId: t.id, publishCount: 1 });
    assert.ok(!(await deliveriesOf(db, eventId)).some((r) => r.subscription_id === late.id));
    const { rows } = await db.query<{ n: bigint; deadline_ok: boolean }>(
      `SELECT count(*) AS n, bool_and(d.deadline_at = e.created_at + interval '1 hour') AS deadline_ok
         FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.event_id = $1`,
      [eventId],
    );
    assert.equal(rows[0]!.n, 5n, "the five subscriptions selecting invoice.paid, as of the event");
    assert.equal(rows[0]!.deadline_ok, true, "deadline = event creation + the tenant's window (WH-18)");
  });

  it("a failed publish is retried after a capped, jittered backoff; the other rows go on", async (db: Database) => {
    await settleLeftovers(db);
    const w = newWorld(db);
    const t = await seedTenant(w);
    await seedSubscription(w, t.id);
    const events = [await ingest(w, t.id), await ingest(w, t.id), await ingest(w, t.id)];
    const dispatcher = new Dispatcher(db, { clock: w.clock });
    let failNext = events[1]!.eventId;
    const flaky: EventPublisher = {
      async publish(event: PublishedEvent, signal: AbortSignal) {
        if (event.eventId === failNext) {
          failNext = "";
          throw new Error("broker unavailable");
        }
        await dispatcher.publish(event, signal);
      },
    };
    const r = relay(w, flaky);
    assert.deepEqual(await r.runOnce(), { claimed: 3, published: 2, failed: 1, lost: 0, released: 0 });
    const { rows } = await db.query<{ next_attempt_at: Date; last_error: string }>(
      "SELECT next_attempt_at, last_error FROM outbox WHERE event_id = $1",
      [events[1]!.eventId],
    );
    const delayMs = rows[0]!.next_attempt_at.getTime() - w.clock.nowMs();
    assert.ok(delayMs >= 500 && delayMs <= 1_000, `equal jitter of base 1000 ms: ${delayMs}`);
    assert.match(rows[0]!.last_error, /broker unavailable/);
    assert.equal((await r.runOnce()).claimed, 0, "not before its retry time");
    w.clock.advance(1_000);
    assert.deepEqual(await r.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
  });

  it("a claim whose lease cannot cover the next publish gives the rest back instead of overrunning", async (db: Database) => {
    await settleLeftovers(db);
    const w = newWorld(db);
    const t = await seedTenant(w);
    for (let i = 0; i < 3; i++) await ingest(w, t.id);
    const slow: EventPublisher = {
      async publish() {
        w.clock.advance(600); // each publish eats 600 ms of a 1 500 ms lease
      },
    };
    const r = relay(w, slow, { leaseMs: 1_500, publishTimeoutMs: 500 });
    const round = await r.runOnce();
    assert.equal(round.claimed, 3);
    // t=0 and t=600 leave ≥ 500 ms of lease; at t=1200 a 500 ms publish would end past 1500.
    assert.equal(round.published, 2);
    assert.equal(round.released, 1, "the lease end would fall inside the next publish");
    assert.deepEqual(await r.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
  });

  it("two relays claiming at once take disjoint rows", async (db: Database) => {
    await settleLeftovers(db);
    const w = newWorld(db);
    const t = await seedTenant(w);
    const ids = new Set<string>();
    for (let i = 0; i < 40; i++) ids.add((await ingest(w, t.id)).eventId);
    w.clock.advance(HOUR_MS);
    const claims = await Promise.all(
      ["r1", "r2", "r3"].map((owner) =>
        webhookOutbox.claim(db, { owner, nowMs: w.clock.nowMs(), leaseMs: 30_000, limit: 1_000 }),
      ),
    );
    const mine = claims.flat().map((c) => c.event!.eventId);
    assert.equal(mine.length, 40);
    assert.ok(mine.every((id) => ids.has(id)));
    assert.equal(new Set(mine).size, 40, "no row claimed twice");
  });
});
