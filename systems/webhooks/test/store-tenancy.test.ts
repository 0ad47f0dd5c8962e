/**
 * WH-12 / WH-25 on both engines: a tenant reads and replays only its own deliveries,
 * attempts, subscriptions and events — another tenant's ids answer exactly like ids that
 * do not exist — and the engine itself refuses a delivery joining two tenants. Plus
 * keyset pagination and replay with stable ids.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { isForeignKeyViolation } from "@casebook/infra/sql/sql-state";
import { contractSuite } from "@casebook/lab/contract-suite";
import { getDelivery, listAttempts, listDeliveries, replayDelivery } from "../src/store/delivery-queries.ts";
import { recordAttempt } from "../src/store/delivery-results.ts";
import { getEvent } from "../src/store/event-repository.ts";
import {
  getSubscription,
  listSubscriptions,
  rotateSubscriptionSecret,
  setSubscriptionActive,
  updateSubscription,
} from "../src/store/subscription-repository.ts";
import { storeBackends } from "./store-backends.ts";
import {
  claim,
  ingest,
  newWorld,
  relayAll,
  seedSubscription,
  seedTenant,
  storeError,
  type World,
} from "./store-fixture.ts";

/** Tenant A with one delivery that failed twice and then ended `failed`; tenant B with nothing. */
async function twoTenants(w: World) {
  const a = await seedTenant(w, { name: "A" });
  const b = await seedTenant(w, { name: "B" });
  const sub = await seedSubscription(w, a.id);
  const { eventId } = await ingest(w, a.id, { payload: { secret: "A's data" } });
  await relayAll(w);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const [c] = await claim(w, a.id);
    const next =
      attempt === 1
        ? { state: "pending" as const, nextAttemptAtMs: w.clock.nowMs() }
        : { state: "failed" as const, reason: "gave up" };
    await recordAttempt(
      w.db,
      { lease: c!, startedAtMs: w.clock.nowMs(), durationMs: 5, responseClass: "5xx", status: 500, next },
      w.clock.nowMs(),
    );
  }
  const page = await listDeliveries(w.db, a.id, { eventId });
  return { a, b, sub, eventId, deliveryId: page.items[0]!.id };
}

contractSuite("webhook tenant isolation and replay", storeBackends("wh_tenancy"), (it) => {
  it("WH-12 WH-25 tenant B can neither read nor replay tenant A's delivery, attempts, subscription or event", async (db: Database) => {
    const w = newWorld(db);
    const { a, b, sub, eventId, deliveryId } = await twoTenants(w);
    assert.equal((await getDelivery(db, a.id, deliveryId))?.attempts, 2, "A sees its own");
    assert.equal(await getDelivery(db, b.id, deliveryId), undefined);
    assert.equal(await listAttempts(db, b.id, deliveryId), undefined);
    assert.deepEqual((await listDeliveries(db, b.id)).items, []);
    assert.deepEqual((await listDeliveries(db, b.id, { eventId })).items, []);
    assert.equal(
      await getSubscription(db, b.id, sub.id),
      undefined,
      "no URL leaks by guessing a subscription id",
    );
    assert.deepEqual((await listSubscriptions(db, b.id)).items, []);
    assert.equal(await getEvent(db, b.id, eventId), undefined, "no payload leaks by guessing an event id");
    await assert.rejects(
      replayDelivery(db, b.id, deliveryId, { nowMs: w.clock.nowMs() }),
      storeError("WEBHOOK_DELIVERY_NOT_FOUND"),
    );
    const nowMs = w.clock.nowMs();
    assert.equal(
      await setSubscriptionActive(db, b.id, sub.id, { active: false, reason: "x", nowMs }),
      undefined,
    );
    assert.equal(
      await updateSubscription(db, b.id, sub.id, { url: "https://evil.example.com", nowMs }),
      undefined,
    );
    await assert.rejects(
      rotateSubscriptionSecret(db, b.id, sub.id, { ...w.ctx(), overlapMs: 0 }),
      storeError("WEBHOOK_SUBSCRIPTION_NOT_FOUND"),
    );
    const after = await getDelivery(db, a.id, deliveryId);
    assert.deepEqual([after?.state, after?.replays], ["failed", 0], "nothing B tried changed A's delivery");
    assert.equal((await getSubscription(db, a.id, sub.id))?.url, "https://hooks.example.com/in");
  });

  it("WH-12 the engine refuses a delivery pairing one tenant's event with another tenant's subscription", async (db: Database) => {
    const w = newWorld(db);
    const { b, eventId } = await twoTenants(w);
    const bSub = await seedSubscription(w, b.id);
    const { rows } = await db.query<{ seq: bigint }>("SELECT seq FROM events WHERE id = $1", [eventId]);
    await assert.rejects(
      db.query(
        `INSERT INTO deliveries (id, event_id, event_seq, subscription_id, tenant_id, state, next_attempt_at,
           deadline_at, created_at, updated_at)
         VALUES ('dlv_' || replace(gen_random_uuid()::text, '-', ''), $1, $2, $3, $4, 'pending', now(), now(), now(), now())`,
        [eventId, rows[0]!.seq, bSub.id, b.id],
      ),
      (err) => isForeignKeyViolation(err),
    );
  });

  it("WH-12 replay keeps the delivery id and the event id; attempt numbers continue; refused while in progress or disabled", async (db: Database) => {
    const w = newWorld(db);
    const { a, sub, eventId, deliveryId } = await twoTenants(w);
    w.clock.advance(60_000);
    const replayed = await replayDelivery(db, a.id, deliveryId, { nowMs: w.clock.nowMs() });
    assert.deepEqual(
      [replayed.id, replayed.eventId, replayed.state, replayed.replays],
      [deliveryId, eventId, "pending", 1],
    );
    assert.equal(
      replayed.deadlineAt.getTime(),
      w.clock.nowMs() + 86_400_000 - 60_000,
      "bounded by the payload's expiry",
    );
    await assert.rejects(
      replayDelivery(db, a.id, deliveryId, { nowMs: w.clock.nowMs() }),
      storeError("WEBHOOK_DELIVERY_IN_PROGRESS"),
    );
    const [c] = await claim(w, a.id);
    assert.equal(c?.deliveryId, deliveryId);
    const write = await recordAttempt(
      db,
      {
        lease: c!,
        startedAtMs: w.clock.nowMs(),
        durationMs: 5,
        responseClass: "2xx",
        status: 200,
        next: { state: "succeeded" },
      },
      w.clock.nowMs(),
    );
    assert.equal(write.attemptNo, 3, "the history is kept; the cycle continues its numbering");
    const firstPage = await listAttempts(db, a.id, deliveryId, { limit: 2 });
    assert.deepEqual(
      firstPage?.items.map((x) => x.attemptNo),
      [1, 2],
    );
    const lastPage = await listAttempts(db, a.id, deliveryId, { limit: 2, cursor: firstPage!.nextCursor! });
    assert.deepEqual([lastPage?.items.map((x) => x.attemptNo), lastPage?.nextCursor], [[3], null]);
    await setSubscriptionActive(db, a.id, sub.id, {
      active: false,
      reason: "paused",
      nowMs: w.clock.nowMs(),
    });
    await assert.rejects(
      replayDelivery(db, a.id, deliveryId, { nowMs: w.clock.nowMs() }),
      storeError("WEBHOOK_SUBSCRIPTION_INACTIVE"),
    );
  });

  it("listings page by keyset: newest first, no row twice or missed, cursors bound to their listing", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    await seedSubscription(w, t.id);
    await seedSubscription(w, t.id);
    for (let i = 0; i < 4; i++) {
      await ingest(w, t.id, { payload: { i } });
      w.clock.advance(1_000);
    }
    await relayAll(w); // 8 deliveries; each event's two share created_at, so the id breaks the tie
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const got = await listDeliveries(db, t.id, { limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...got.items.map((d) => d.id));
      if (got.nextCursor === null) break;
      cursor = got.nextCursor;
    }
    assert.equal(seen.length, 8);
    assert.equal(new Set(seen).size, 8);
    const all = (await listDeliveries(db, t.id, { limit: 100 })).items;
    assert.deepEqual(
      seen,
      all.map((d) => d.id),
      "pages concatenate to the whole listing",
    );
    for (let i = 1; i < all.length; i++)
      assert.ok(all[i - 1]!.createdAt >= all[i]!.createdAt, "newest first");
    const subs = await listSubscriptions(db, t.id, { limit: 1 });
    assert.equal(subs.items.length, 1);
    await assert.rejects(
      listDeliveries(db, t.id, { cursor: subs.nextCursor! }),
      storeError("WEBHOOK_CURSOR_INVALID"),
    );
    await assert.rejects(
      listDeliveries(db, t.id, { limit: 101 }),
      storeError("WEBHOOK_CURSOR_INVALID", "limit"),
    );
  });
});
