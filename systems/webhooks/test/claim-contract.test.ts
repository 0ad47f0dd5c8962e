/**
 * Delivery claims, leases and compare-and-swap writes on both engines: WH-10 (disjoint
 * claims), WH-11 (an expired lease is claimed again under the same delivery id; the old
 * owner's late write loses), the lease-vs-HTTP-deadline guard, WH-04/WH-18 (the re-check
 * before sending), WH-03 (ordering key: serial, skip after a final state), and the hooks
 * a fair scheduler needs (WH-15). Time is a manual clock: no test sleeps.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import {
  claimDue,
  claimDueForTenant,
  dueCountsByTenant,
  LEASE_HEADROOM_MS,
  releaseLease,
  renewLease,
} from "../src/store/delivery-claims.ts";
import { listAttempts } from "../src/store/delivery-queries.ts";
import { type AttemptResult, recordAttempt, recordAttempts } from "../src/store/delivery-results.ts";
import { loadForSend } from "../src/store/send-check.ts";
import {
  rotateSubscriptionSecret,
  setSubscriptionActive,
  updateSubscription,
} from "../src/store/subscription-repository.ts";
import { storeBackends } from "./store-backends.ts";
import {
  claim,
  deliveryRow,
  HOUR_MS,
  HTTP_DEADLINE_MS,
  ingest,
  LEASE_MS,
  newWorld,
  relayAll,
  seedSubscription,
  seedTenant,
  storeError,
  type World,
} from "./store-fixture.ts";

/** A tenant with one subscription and `n` fanned-out deliveries. */
async function queued(w: World, n: number, tenantInput: { deliveryWindowS?: number } = {}) {
  const tenant = await seedTenant(w, tenantInput);
  const subscription = await seedSubscription(w, tenant.id);
  for (let i = 0; i < n; i++) await ingest(w, tenant.id, { payload: { i } });
  await relayAll(w);
  return { tenant, subscription };
}

function result(
  lease: AttemptResult["lease"],
  w: World,
  next: AttemptResult["next"],
  status = 200,
): AttemptResult {
  return {
    lease,
    startedAtMs: w.clock.nowMs(),
    durationMs: 42,
    responseClass: status < 300 ? "2xx" : `${Math.floor(status / 100)}xx`,
    status,
    next,
  };
}

contractSuite("webhook delivery claims", storeBackends("wh_claims"), (it) => {
  it("WH-10 claimers racing take disjoint deliveries, each claim bumping lease_version", async (db: Database) => {
    const w = newWorld(db);
    const { tenant } = await queued(w, 30);
    const claims = await Promise.all(
      ["a", "b", "c"].map((workerId) => claim(w, tenant.id, { workerId, limit: 12 })),
    );
    const ids = claims.flat().map((c) => c.deliveryId);
    assert.equal(ids.length, 30);
    assert.equal(new Set(ids).size, 30, "no delivery claimed twice");
    assert.ok(
      claims.flat().every((c) => c.leaseVersion === 1n && c.previousOwner === null && c.attempts === 0),
    );
    assert.deepEqual(await claim(w, tenant.id), [], "leased deliveries are not due");
  });

  it("a lease not longer than the HTTP deadline plus headroom is refused (svix PR #2181)", async (db: Database) => {
    const w = newWorld(db);
    const options = { workerId: "w", nowMs: w.clock.nowMs(), limit: 1, httpDeadlineMs: HTTP_DEADLINE_MS };
    for (const leaseMs of [1_000, HTTP_DEADLINE_MS, HTTP_DEADLINE_MS + LEASE_HEADROOM_MS - 1]) {
      await assert.rejects(
        claimDue(db, { ...options, leaseMs }),
        storeError("WEBHOOK_LEASE_TOO_SHORT"),
        `${leaseMs}`,
      );
    }
    await claimDue(db, { ...options, tenantId: "nobody", leaseMs: HTTP_DEADLINE_MS + LEASE_HEADROOM_MS });
    const lease = { deliveryId: "dlv_x", leaseVersion: 1n, workerId: "w", leaseExpiresAtMs: 0 };
    await assert.rejects(
      renewLease(db, lease, { nowMs: 0, leaseMs: 5_000, httpDeadlineMs: HTTP_DEADLINE_MS }),
      storeError("WEBHOOK_LEASE_TOO_SHORT"),
    );
  });

  it("WH-11 an expired lease is claimed again under the same delivery id; the old owner's late writes lose", async (db: Database) => {
    const w = newWorld(db);
    const { tenant } = await queued(w, 1);
    const [first] = await claim(w, tenant.id, { workerId: "dead" });
    w.clock.advance(LEASE_MS - 1);
    assert.deepEqual(await claim(w, tenant.id, { workerId: "other" }), [], "not before the lease ends");
    w.clock.advance(1);
    const [second] = await claim(w, tenant.id, { workerId: "other" });
    assert.equal(second?.deliveryId, first!.deliveryId, "same delivery id, retried by another worker");
    assert.equal(second?.previousOwner, "dead");
    assert.equal(second?.leaseVersion, first!.leaseVersion + 1n);
    const late = await recordAttempt(db, result(first!, w, { state: "succeeded" }), w.clock.nowMs());
    assert.deepEqual(late, { deliveryId: first!.deliveryId, won: false, state: null, attemptNo: null });
    assert.deepEqual(await loadForSend(db, first!, w.clock.nowMs()), {
      send: false,
      reason: "lease_lost",
      settled: false,
    });
    const won = await recordAttempt(db, result(second!, w, { state: "succeeded" }), w.clock.nowMs());
    assert.deepEqual(won, { deliveryId: first!.deliveryId, won: true, state: "succeeded", attemptNo: 1 });
    const page = await listAttempts(db, tenant.id, first!.deliveryId);
    assert.equal(page?.items.length, 1, "only the current owner's attempt is recorded");
    assert.equal((await deliveryRow(db, first!.deliveryId)).state, "succeeded");
  });

  it("a batch of results: success, retry at its persisted time, final failures; a retry past the deadline expires", async (db: Database) => {
    const w = newWorld(db);
    const { tenant } = await queued(w, 4);
    const [a, b, c, d] = await claim(w, tenant.id, { limit: 4 });
    const now = w.clock.nowMs();
    const writes = await recordAttempts(
      db,
      [
        result(a!, w, { state: "succeeded" }),
        { ...result(b!, w, { state: "pending", nextAttemptAtMs: now + 4_000 }, 404), clientErrorStreak: 1 },
        result(c!, w, { state: "quarantined", reason: "persistent 4xx" }, 403),
        result(d!, w, { state: "pending", nextAttemptAtMs: d!.deadlineAtMs }, 503),
      ],
      now,
    );
    assert.deepEqual(
      writes.map((x) => [x.won, x.state, x.attemptNo]),
      [
        [true, "succeeded", 1],
        [true, "pending", 1],
        [true, "quarantined", 1],
        [true, "expired", 1],
      ],
    );
    assert.equal(
      (await deliveryRow(db, d!.deliveryId)).state_reason,
      "deadline",
      "WH-18: never past the window",
    );
    assert.deepEqual(await claim(w, tenant.id), [], "the retry is not due yet");
    w.clock.advance(4_000);
    const [again] = await claim(w, tenant.id);
    assert.equal(again?.deliveryId, b!.deliveryId);
    assert.equal(again?.attempts, 1);
    assert.equal(
      again?.clientErrorStreak,
      1,
      "the core's client-error streak travels with the delivery (WH-16)",
    );
    assert.deepEqual(
      (await recordAttempts(db, [result(b!, w, { state: "succeeded" })], w.clock.nowMs()))[0]?.won,
      false,
      "a stale lease version loses even for its own worker",
    );
  });

  it("WH-04 a subscription disabled after its delivery was queued: the re-check says don't send and cancels it", async (db: Database) => {
    const w = newWorld(db);
    const { tenant, subscription } = await queued(w, 1);
    await setSubscriptionActive(db, tenant.id, subscription.id, {
      active: false,
      reason: "paused by tenant",
      nowMs: w.clock.nowMs(),
    });
    const [claimed] = await claim(w, tenant.id);
    assert.ok(claimed, "a queued delivery of a disabled subscription is still claimed, then re-checked");
    assert.deepEqual(await loadForSend(db, claimed, w.clock.nowMs()), {
      send: false,
      reason: "subscription_inactive",
      settled: true,
    });
    const row = await deliveryRow(db, claimed.deliveryId);
    assert.deepEqual([row.state, row.attempts, row.state_reason], ["cancelled", 0, "subscription_inactive"]);
  });

  it("WH-18 the re-check refuses past the deadline; claims never take a delivery past it", async (db: Database) => {
    const w = newWorld(db);
    const { tenant } = await queued(w, 2, { deliveryWindowS: 60 });
    // A lease longer than the window left: the deadline passes while the worker still holds it.
    const [one] = await claim(w, tenant.id, { limit: 1, leaseMs: 120_000 });
    w.clock.advance(60_000);
    assert.deepEqual(await claim(w, tenant.id), [], "the other delivery is past its deadline: not claimable");
    const plan = await loadForSend(db, one!, w.clock.nowMs());
    assert.deepEqual(plan, { send: false, reason: "deadline_passed", settled: true });
    assert.equal((await deliveryRow(db, one!.deliveryId)).state, "expired");
  });

  it("WH-04 the re-check sends under the CURRENT url and live secrets, with payload and attempt number", async (db: Database) => {
    const w = newWorld(db);
    const { tenant, subscription } = await queued(w, 1);
    await updateSubscription(db, tenant.id, subscription.id, {
      url: "https://moved.example.com/hook",
      nowMs: 0,
    });
    const rotated = await rotateSubscriptionSecret(db, tenant.id, subscription.id, {
      ...w.ctx(),
      overlapMs: HOUR_MS,
    });
    const [claimed] = await claim(w, tenant.id);
    const plan = await loadForSend(db, claimed!, w.clock.nowMs());
    assert.ok(plan.send);
    assert.equal(plan.url, "https://moved.example.com/hook");
    assert.deepEqual(
      plan.secrets.map((s) => s.version),
      [2, 1],
    );
    assert.equal(plan.secrets[0]!.secret, rotated.secret);
    assert.deepEqual(plan.payload, { i: 0 });
    assert.equal(plan.attemptNo, 1);
    assert.equal(plan.eventType, "invoice.paid");
    assert.match(plan.eventId, /^msg_/);
    w.clock.advance(LEASE_MS);
    assert.equal(
      (await loadForSend(db, claimed!, w.clock.nowMs())).send,
      false,
      "an expired lease never sends",
    );
  });

  it("WH-03 ordered deliveries: one at a time per (subscription, key) in event order; a final failure unblocks the next", async (db: Database) => {
    const w = newWorld(db);
    const tenant = await seedTenant(w);
    const sub = await seedSubscription(w, tenant.id, { orderingKeyPath: "object.id" });
    const events: string[] = [];
    for (const key of ["A", "A", "B", "A"]) {
      events.push((await ingest(w, tenant.id, { payload: { object: { id: key } } })).eventId);
      w.clock.advance(1);
    }
    await ingest(w, tenant.id, { payload: { unkeyed: true } }); // no key at the path: unordered
    await relayAll(w);
    const first = await claim(w, tenant.id, { limit: 10 });
    const byEvent = (c: { eventId: string }) => events.indexOf(c.eventId);
    assert.deepEqual(first.map(byEvent).sort(), [-1, 0, 2], "heads of A and B, and the unordered one");
    assert.deepEqual(
      await claim(w, tenant.id),
      [],
      "A's second waits behind its head (head-of-line blocking)",
    );
    const headA = first.find((c) => byEvent(c) === 0)!;
    await recordAttempt(
      db,
      result(headA, w, { state: "pending", nextAttemptAtMs: w.clock.nowMs() + 1_000 }, 500),
      w.clock.nowMs(),
    );
    w.clock.advance(1_000);
    const retried = await claim(w, tenant.id);
    assert.deepEqual(retried.map(byEvent), [0], "a retrying head keeps its place");
    // Skip policy: the head fails for good; the next of A becomes claimable, in order.
    await recordAttempt(
      db,
      result(retried[0]!, w, { state: "failed", reason: "gave up" }, 500),
      w.clock.nowMs(),
    );
    const next = await claim(w, tenant.id);
    assert.deepEqual(next.map(byEvent), [1]);
    await recordAttempt(db, result(next[0]!, w, { state: "succeeded" }), w.clock.nowMs());
    assert.deepEqual((await claim(w, tenant.id)).map(byEvent), [3]);
    assert.equal(sub.orderingKeyPath, "object.id");
  });

  it("WH-15 due counts per tenant (capped, with weights) and per-tenant claims serve a fair scheduler", async (db: Database) => {
    const w = newWorld(db, Date.UTC(2025, 2, 1));
    const { tenant: big } = await queued(w, 12);
    const { tenant: small } = await queued(w, 2);
    const counts = await dueCountsByTenant(db, { nowMs: w.clock.nowMs(), capPerTenant: 5 });
    const mine = counts.filter((c) => c.tenantId === big.id || c.tenantId === small.id);
    assert.deepEqual(
      mine.map((c) => [c.tenantId, c.due, c.weight]).sort(),
      [
        [big.id, 5, 1],
        [small.id, 2, 1],
      ].sort(),
    );
    const claimed = await claimDueForTenant(db, small.id, {
      workerId: "w",
      nowMs: w.clock.nowMs(),
      leaseMs: LEASE_MS,
      httpDeadlineMs: HTTP_DEADLINE_MS,
      limit: 10,
    });
    assert.equal(claimed.length, 2);
    assert.ok(
      claimed.every((c) => c.tenantId === small.id),
      "a tenant claim never takes another tenant's work",
    );
  });

  it("renewLease extends a live lease; releaseLease hands the delivery back, due at once", async (db: Database) => {
    const w = newWorld(db);
    const { tenant } = await queued(w, 1);
    const [c] = await claim(w, tenant.id);
    w.clock.advance(20_000);
    const renewed = await renewLease(db, c!, {
      nowMs: w.clock.nowMs(),
      leaseMs: LEASE_MS,
      httpDeadlineMs: HTTP_DEADLINE_MS,
    });
    assert.equal(renewed?.leaseExpiresAtMs, w.clock.nowMs() + LEASE_MS);
    w.clock.advance(LEASE_MS - 1);
    assert.deepEqual(await claim(w, tenant.id), [], "the renewed lease still holds");
    assert.ok(await releaseLease(db, renewed!, w.clock.nowMs()));
    const [again] = await claim(w, tenant.id, { workerId: "next" });
    assert.equal(again?.deliveryId, c!.deliveryId);
    assert.equal(again?.previousOwner, null, "a released delivery is not a takeover");
    assert.equal(
      await renewLease(db, c!, {
        nowMs: w.clock.nowMs(),
        leaseMs: LEASE_MS,
        httpDeadlineMs: HTTP_DEADLINE_MS,
      }),
      undefined,
    );
  });
});
