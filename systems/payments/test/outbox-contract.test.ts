/**
 * The outbox and its relay (PY-11), one suite on PGlite and on PostgreSQL: enqueue is
 * part of the caller's transaction, per-key order is commit order, a slow key does not
 * hold the others back, failures retry with backoff without reordering, and a relay that
 * dies mid-publish leaves its events to be republished under the same ids.
 */
import assert from "node:assert/strict";
import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { enqueue, type OutboxEvent, resumeStream, streamState } from "../src/store/outbox.ts";
import { type EventPublisher, OutboxRelay } from "../src/workers/outbox-relay.ts";
import { latch, outboxBackends, Recorder, seqs } from "./outbox-backends.ts";

const T0 = Date.UTC(2026, 9, 22, 12, 0, 0);
const noBackoffJitter = (maxAttempts = 25) =>
  ({ retryBaseMs: 1_000, retryCapMs: 60_000, retryJitter: "none", maxAttempts }) as const;
const quiet = () => {};

/** Drains everything due now with deterministic rounds; bounded. */
async function drain(relay: OutboxRelay, maxRounds = 100): Promise<void> {
  for (let round = 0; round < maxRounds; round++) {
    if ((await relay.runOnce()).claimed === 0) return;
  }
  throw new Error(`still claiming after ${maxRounds} rounds`);
}

contractSuite("outbox", outboxBackends, (it) => {
  it("PY-11 an event enqueued in a transaction that rolls back is never published", async ({ db, key }) => {
    const account = key("rollback");
    await assert.rejects(
      db.transaction(async (tx) => {
        await enqueue(tx, {
          orderingKey: account,
          type: "payment.captured",
          payload: { amountMinor: 5000n },
        });
        throw new Error("business step failed");
      }),
      /business step failed/,
    );
    const recorder = new Recorder();
    await drain(new OutboxRelay(db, { publisher: recorder, onError: quiet }));
    assert.deepEqual(recorder.idsOf(account), []);
    assert.equal(await streamState(db, account), undefined);
  });

  it("enqueue keeps a stable id, writes bigints as strings, and rejects bad events", async ({ db, key }) => {
    const account = key("shape");
    const given = await db.transaction((tx) =>
      enqueue(tx, {
        orderingKey: account,
        type: "payment.captured",
        payload: { amountMinor: 5000n },
        eventId: "evt-1",
      }),
    );
    assert.deepEqual(given, { eventId: "evt-1", seq: 1n });
    const recorder = new Recorder();
    await drain(new OutboxRelay(db, { publisher: recorder, onError: quiet }));
    assert.equal(recorder.events.length, 1);
    assert.equal(recorder.events[0]!.eventId, "evt-1");
    assert.deepEqual(recorder.events[0]!.payload, { amountMinor: "5000" });
    const bad = [
      { orderingKey: "", type: "a.b", payload: {} },
      { orderingKey: account, type: "Payment Captured", payload: {} },
      { orderingKey: account, type: "a.b", payload: [] as unknown as Record<string, unknown> },
    ];
    for (const event of bad) {
      await assert.rejects(
        db.transaction((tx) => enqueue(tx, event)),
        (err) => outboxErrors.is(err, "OUTBOX_EVENT_INVALID"),
      );
    }
    await assert.rejects(
      db.transaction((tx) =>
        enqueue(
          tx,
          { orderingKey: account, type: "a.b", payload: { big: "x".repeat(200) } },
          { maxPayloadBytes: 100 },
        ),
      ),
      (err) => outboxErrors.is(err, "OUTBOX_PAYLOAD_TOO_LARGE"),
    );
    await assert.rejects(
      db.transaction((tx) =>
        enqueue(tx, { orderingKey: account, type: "a.b", payload: {}, eventId: "evt-1" }),
      ),
      (err) => outboxErrors.is(err, "OUTBOX_EVENT_DUPLICATE"),
    );
    assert.equal((await streamState(db, account))?.lastSeq, 1n);
  });

  it("PY-11 many events over several accounts leave in commit order per account", async ({ db, key }) => {
    const accounts = Array.from({ length: 5 }, (_, i) => key(`order${i}`));
    const committed = new Map<string, string[]>(accounts.map((a) => [a, []]));
    for (let i = 0; i < 60; i++) {
      const account = accounts[(i * 7) % accounts.length]!;
      const { eventId } = await db.transaction((tx) =>
        enqueue(tx, { orderingKey: account, type: "payment.event", payload: { i } }),
      );
      committed.get(account)!.push(eventId);
    }
    const recorder = new Recorder();
    // Small batches and few slots force many claims, interleaving keys across rounds.
    await drain(
      new OutboxRelay(db, { publisher: recorder, maxInFlightKeys: 2, maxBatch: 3, onError: quiet }),
    );
    for (const account of accounts) assert.deepEqual(recorder.idsOf(account), committed.get(account));
    assert.equal(recorder.events.length, 60);
  });

  it("PY-11 a slow publisher on account A does not delay account B", async ({ db, key }) => {
    const slow = key("slow");
    const fast = key("fast");
    const gate = latch();
    const aStarted = latch();
    const recorder = new Recorder();
    const publisher: EventPublisher = {
      async publish(event, signal) {
        if (event.orderingKey === slow) {
          aStarted.open();
          await gate.promise; // A's consumer hangs until the test lets it go
        }
        await recorder.publish(event);
        signal.throwIfAborted();
      },
    };
    for (let i = 0; i < 3; i++) {
      await db.transaction((tx) => enqueue(tx, { orderingKey: slow, type: "payment.event", payload: { i } }));
    }
    const relay = new OutboxRelay(db, { publisher, maxInFlightKeys: 4, pollIntervalMs: 10, onError: quiet });
    relay.start();
    try {
      await aStarted.promise;
      // B's events are committed while A's first publish is stuck, and still get through.
      for (let i = 0; i < 5; i++) {
        await db.transaction((tx) =>
          enqueue(tx, { orderingKey: fast, type: "payment.event", payload: { i } }),
        );
      }
      await recorder.until(() => recorder.idsOf(fast).length === 5, "B's 5 events");
      assert.deepEqual(recorder.dedupedSeqsOf(fast), seqs(5));
      assert.deepEqual(recorder.idsOf(slow), [], "A is still blocked: nothing of A may have overtaken it");
      gate.open();
      await recorder.until(() => recorder.idsOf(slow).length === 3, "A's 3 events");
      assert.deepEqual(recorder.dedupedSeqsOf(slow), seqs(3));
    } finally {
      gate.open();
      await relay.stop();
    }
  });

  it("PY-11 a failing publish retries with backoff and never lets a later event overtake it", async ({
    db,
    key,
  }) => {
    const account = key("retry");
    const other = key("other");
    const clock = new ManualClock(T0);
    for (let i = 1; i <= 3; i++) {
      await db.transaction((tx) =>
        enqueue(tx, { orderingKey: account, type: "payment.event", payload: { i } }, { nowMs: T0 }),
      );
    }
    let failuresLeft = 2;
    const recorder = new Recorder();
    const publisher: EventPublisher = {
      async publish(event: OutboxEvent) {
        if (event.seq === 2n && failuresLeft > 0) {
          failuresLeft -= 1;
          throw new Error("consumer 503");
        }
        await recorder.publish(event);
      },
    };
    const relay = new OutboxRelay(db, { publisher, clock, ...noBackoffJitter(), onError: quiet });
    assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 1, failed: 1, lost: 0, released: 0 });
    let state = await streamState(db, account);
    assert.equal(state?.publishedSeq, 1n);
    assert.equal(state?.attempts, 1);
    assert.equal(state?.nextAttemptAtMs, T0 + 1_000);
    assert.match(state?.lastError ?? "", /consumer 503/);
    // Not due yet: the key is left alone, while another key still flows.
    await db.transaction((tx) =>
      enqueue(tx, { orderingKey: other, type: "payment.event", payload: {} }, { nowMs: T0 }),
    );
    assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
    clock.advance(1_000);
    assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 0, failed: 1, lost: 0, released: 0 });
    state = await streamState(db, account);
    assert.equal(state?.nextAttemptAtMs, T0 + 1_000 + 2_000, "the second delay doubles");
    clock.advance(1_999);
    assert.equal((await relay.runOnce()).claimed, 0);
    clock.advance(1);
    assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 2, failed: 0, lost: 0, released: 0 });
    assert.deepEqual(recorder.dedupedSeqsOf(account), seqs(3));
    assert.deepEqual(recorder.idsOf(account).length, 3, "each event published once");
    state = await streamState(db, account);
    assert.equal(state?.attempts, 0);
    assert.equal(state?.lastError, null);
  });

  it("a key whose head keeps failing is parked after maxAttempts and resumes on demand", async ({
    db,
    key,
  }) => {
    const account = key("park");
    const clock = new ManualClock(T0);
    await db.transaction((tx) =>
      enqueue(tx, { orderingKey: account, type: "payment.event", payload: {} }, { nowMs: T0 }),
    );
    let healthy = false;
    const recorder = new Recorder();
    const publisher: EventPublisher = {
      async publish(event) {
        if (!healthy) throw new Error("consumer gone");
        await recorder.publish(event);
      },
    };
    const relay = new OutboxRelay(db, { publisher, clock, ...noBackoffJitter(2), onError: quiet });
    assert.equal((await relay.runOnce()).failed, 1);
    clock.advance(1_000);
    assert.equal((await relay.runOnce()).failed, 1);
    assert.equal((await streamState(db, account))?.parked, true);
    clock.advance(3_600_000);
    assert.equal((await relay.runOnce()).claimed, 0, "a parked key is not retried");
    healthy = true;
    assert.equal(await resumeStream(db, account, clock.nowMs()), true);
    assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
    assert.deepEqual(recorder.dedupedSeqsOf(account), [1n]);
  });

  it("PY-11 a relay that dies mid-publish: another takes the key after the lease, same ids, same order", async ({
    db,
    key,
  }) => {
    const account = key("crash");
    const clock = new ManualClock(T0);
    for (let i = 0; i < 3; i++) {
      await db.transaction((tx) =>
        enqueue(tx, { orderingKey: account, type: "payment.event", payload: { i } }, { nowMs: T0 }),
      );
    }
    const recorder = new Recorder();
    const hang = latch();
    const delivered = latch();
    // Relay A's consumer receives event 1, then A "dies" before marking it published.
    const dying: EventPublisher = {
      async publish(event) {
        await recorder.publish(event);
        delivered.open();
        await hang.promise;
        throw new Error("relay A died");
      },
    };
    const leaseMs = 60_000;
    const relayA = new OutboxRelay(db, {
      publisher: dying,
      clock,
      leaseMs,
      publishTimeoutMs: 30_000,
      onError: quiet,
    });
    const relayB = new OutboxRelay(db, { publisher: recorder, clock, leaseMs, onError: quiet });
    const roundA = relayA.runOnce();
    await delivered.promise;
    assert.equal((await relayB.runOnce()).claimed, 0, "A's lease is live: B must not touch the key");
    clock.advance(leaseMs);
    assert.deepEqual(await relayB.runOnce(), { claimed: 1, published: 3, failed: 0, lost: 0, released: 0 });
    hang.open();
    await roundA; // A's late failure is fenced off: it cannot touch B's progress
    assert.equal((await streamState(db, account))?.publishedSeq, 3n);
    assert.equal(recorder.idsOf(account).length, 4, "event 1 twice: at least once");
    assert.deepEqual(recorder.dedupedSeqsOf(account), seqs(3), "deduped by id, in order");
  });
});
