/**
 * The transactional outbox and its relay on both engines (PGlite in memory, PostgreSQL in a
 * fresh schema), both disciplines, on a manual clock: an event exists iff its transaction
 * committed; per-key order holds across several relays; delivery is at least once under a
 * stable event id; a relay killed between publish and mark has the item republished after
 * its lease; a failure stranding claims gives them back before the next claim; failures back
 * off and park after maxAttempts until resumed; bounds are refused.
 */
import assert from "node:assert/strict";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { eventually } from "@casebook/lab/eventually";
import { sqlBackends } from "@casebook/lab/sql-backends";
import {
  MAX_OUTBOX_BATCH,
  type NewOrderedEvent,
  OrderedOutbox,
  type OrderedOutboxEvent,
  type OutboxEventBase,
  UnorderedOutbox,
  type UnorderedRow,
} from "../../src/sql/outbox.ts";
import { orderedOutboxDdl, unorderedOutboxDdl } from "../../src/sql/outbox-ddl.ts";
import { outboxErrors } from "../../src/sql/outbox-errors.ts";
import { type EventPublisher, OutboxRelay, type OutboxRelayOptions } from "../../src/sql/outbox-relay.ts";
import type { Database, Queryable } from "../../src/sql/sql.ts";

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;
const quiet = () => {};
let tables = 0;

async function ordered(db: Database): Promise<OrderedOutbox> {
  tables += 1;
  const names = { streams: `ob_streams_${tables}`, events: `ob_events_${tables}` };
  await db.exec(orderedOutboxDdl(names));
  return new OrderedOutbox(names);
}

async function unordered(db: Database): Promise<UnorderedOutbox> {
  tables += 1;
  const table = `ob_rows_${tables}`;
  await db.exec(unorderedOutboxDdl({ table, columns: "tenant_id text NOT NULL" }));
  return new UnorderedOutbox({ table, columns: ["tenant_id"] });
}

/** Records every publication, duplicates included. */
class Recorder<E extends OutboxEventBase> implements EventPublisher<E> {
  readonly events: E[] = [];
  async publish(event: E): Promise<void> {
    this.events.push(event);
  }
  ids(): string[] {
    return this.events.map((e) => e.eventId);
  }
}

/** A transaction stand-in that fails any statement: what must be refused before any query. */
const noQuery: Queryable = {
  async query() {
    throw new Error("a statement was sent");
  },
  async exec() {
    throw new Error("a script was sent");
  },
};

function keyed(orderingKey: string, eventId: string, payload: Record<string, unknown> = {}): NewOrderedEvent {
  return { orderingKey, type: "payment.captured", payload, eventId };
}

async function eventCount(db: Database, events: string): Promise<bigint> {
  const { rows } = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${events}`);
  return rows[0]!.n;
}

function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function relayOf<E extends OutboxEventBase>(
  db: Database,
  clock: ManualClock,
  options: Pick<OutboxRelayOptions<E>, "outbox" | "publisher"> & Partial<OutboxRelayOptions<E>>,
): OutboxRelay<E> {
  return new OutboxRelay(db, {
    clock,
    leaseMs: LEASE_MS,
    retryBaseMs: 1_000,
    retryJitter: "none",
    onError: quiet,
    ...options,
  });
}

async function drain<E extends OutboxEventBase>(relay: OutboxRelay<E>, maxRounds = 200): Promise<void> {
  for (let round = 0; round < maxRounds; round++) if ((await relay.runOnce()).claimed === 0) return;
  throw new Error(`still claiming after ${maxRounds} rounds`);
}

const backends = sqlBackends({
  system: "outbox",
  prefix: "outbox",
  prepare: async () => {},
  subject: (db) => db,
});

contractSuite("outbox", backends, (it) => {
  it("ordered: an event exists iff its transaction committed", async (db) => {
    const outbox = await ordered(db);
    await assert.rejects(
      db.transaction(async (tx) => {
        await outbox.enqueue(tx, { orderingKey: "k", type: "a.b", payload: { n: 1n } }, { nowMs: T0 });
        throw new Error("the business step failed");
      }),
      /business step failed/,
    );
    assert.equal(await outbox.state(db, "k"), undefined);
    const given = await db.transaction((tx) =>
      outbox.enqueue(
        tx,
        { orderingKey: "k", type: "a.b", payload: { n: 5000n }, eventId: "e1" },
        { nowMs: T0 },
      ),
    );
    assert.deepEqual(given, { eventId: "e1", seq: 1n });
    const recorder = new Recorder<OrderedOutboxEvent>();
    await drain(relayOf(db, new ManualClock(T0), { outbox, publisher: recorder }));
    assert.deepEqual(recorder.ids(), ["e1"]);
    assert.deepEqual(recorder.events[0]!.payload, { n: "5000" }, "bigints as decimal strings");
    assert.equal(recorder.events[0]!.createdAtMs, T0);
  });

  it("unordered: an event exists iff its transaction committed", async (db) => {
    const outbox = await unordered(db);
    await assert.rejects(
      db.transaction(async (tx) => {
        await outbox.enqueue(tx, { eventId: "gone", columns: { tenant_id: "t1" } }, { nowMs: T0 });
        throw new Error("the business step failed");
      }),
      /business step failed/,
    );
    await db.transaction((tx) =>
      outbox.enqueue(tx, { eventId: "kept", columns: { tenant_id: "t1" } }, { nowMs: T0 }),
    );
    const recorder = new Recorder<UnorderedRow>();
    await drain(relayOf(db, new ManualClock(T0), { outbox, publisher: recorder }));
    assert.deepEqual(recorder.ids(), ["kept"]);
    assert.deepEqual(recorder.events[0]!.columns, { tenant_id: "t1" });
    assert.equal(recorder.events[0]!.publishCount, 1);
    assert.deepEqual(await outbox.lag(db, T0), { unpublished: 0n, parked: 0n, oldestAgeMs: 0 });
  });

  it("enqueue refuses malformed, oversized and duplicate events", async (db) => {
    const outbox = await ordered(db);
    const bad = [
      { orderingKey: "", type: "a.b", payload: {} },
      { orderingKey: "k".repeat(256), type: "a.b", payload: {} },
      { orderingKey: "k", type: "Payment Captured", payload: {} },
      { orderingKey: "k", type: "a.b", payload: [] as unknown as Record<string, unknown> },
      { orderingKey: "k", type: "a.b", payload: {}, eventId: "" },
    ];
    for (const event of bad)
      await assert.rejects(
        db.transaction((tx) => outbox.enqueue(tx, event)),
        (err) => outboxErrors.is(err, "OUTBOX_EVENT_INVALID"),
      );
    await assert.rejects(
      db.transaction((tx) =>
        outbox.enqueue(
          tx,
          { orderingKey: "k", type: "a.b", payload: { x: "x".repeat(200) } },
          { maxPayloadBytes: 100 },
        ),
      ),
      (err) => outboxErrors.is(err, "OUTBOX_PAYLOAD_TOO_LARGE") && err.fields.maxBytes === 100,
    );
    await db.transaction((tx) =>
      outbox.enqueue(tx, { orderingKey: "k", type: "a.b", payload: {}, eventId: "same" }),
    );
    await assert.rejects(
      db.transaction((tx) =>
        outbox.enqueue(tx, { orderingKey: "j", type: "a.b", payload: {}, eventId: "same" }),
      ),
      (err) => outboxErrors.is(err, "OUTBOX_EVENT_DUPLICATE"),
    );
    assert.equal((await outbox.state(db, "k"))?.lastSeq, 1n);
    const rows = await unordered(db);
    await assert.rejects(
      db.transaction((tx) => rows.enqueue(tx, { eventId: "x", columns: { other: 1 } })),
      (err) => outboxErrors.is(err, "OUTBOX_EVENT_INVALID"),
    );
  });

  it("ordered: enqueueMany gives each key consecutive seqs in input order, after its earlier events, and the relay publishes them in that order", async (db) => {
    const outbox = await ordered(db);
    for (const eventId of ["a1", "a2"])
      await db.transaction((tx) => outbox.enqueue(tx, keyed("a", eventId), { nowMs: T0 - 1_000 }));
    const batch = [
      keyed("a", "a3", { n: 1n }),
      keyed("b", "b1"),
      keyed("c", "c1"),
      keyed("a", "a4"),
      keyed("b", "b2"),
      keyed("a", "a5"),
    ];
    const written = await db.transaction((tx) => outbox.enqueueMany(tx, batch, { nowMs: T0 }));
    assert.deepEqual(written, [
      { eventId: "a3", seq: 3n },
      { eventId: "b1", seq: 1n },
      { eventId: "c1", seq: 1n },
      { eventId: "a4", seq: 4n },
      { eventId: "b2", seq: 2n },
      { eventId: "a5", seq: 5n },
    ]);
    assert.equal((await outbox.state(db, "a"))?.lastSeq, 5n, "the key's stream row moved by its count");
    const fresh = await outbox.state(db, "b");
    assert.equal(fresh?.lastSeq, 2n);
    assert.equal(fresh?.nextAttemptAtMs, T0, "a new stream is due at once, as enqueue makes it");
    const clock = new ManualClock(T0);
    const recorder = new Recorder<OrderedOutboxEvent>();
    await drain(relayOf(db, clock, { outbox, publisher: recorder, maxInFlightKeys: 2, maxBatch: 2 }));
    for (const [key, ids] of [
      ["a", ["a1", "a2", "a3", "a4", "a5"]],
      ["b", ["b1", "b2"]],
      ["c", ["c1"]],
    ] as const) {
      const published = recorder.events.filter((e) => e.orderingKey === key);
      assert.deepEqual(
        published.map((e) => e.eventId),
        ids,
        key,
      );
      assert.deepEqual(
        published.map((e) => e.seq),
        ids.map((_, i) => BigInt(i + 1)),
        key,
      );
    }
    const a3 = recorder.events.find((e) => e.eventId === "a3")!;
    assert.deepEqual(a3.payload, { n: "1" }, "bigints as decimal strings");
    assert.equal(a3.createdAtMs, T0);
    assert.equal(a3.type, "payment.captured");
  });

  it("ordered: enqueueManyStatement composes into the caller's statement: its CTEs prefixed, parameters after the caller's, the events written as enqueueMany writes them", async (db) => {
    const outbox = await ordered(db);
    await db.transaction((tx) => outbox.enqueue(tx, keyed("a", "a1"), { nowMs: T0 - 1_000 }));
    const part = outbox.enqueueManyStatement([keyed("a", "a2"), keyed("b", "b1"), keyed("a", "a3")], {
      nowMs: T0,
      offset: 1,
      prefix: "ev_",
    });
    assert.equal(part.events, "ev_events");
    const { rows } = await db.query<{ event_id: string; seq: bigint; tag: string }>(
      `WITH ${part.ctes} SELECT event_id, seq, $1::text AS tag FROM ${part.events} ORDER BY event_id`,
      ["mine", ...part.params],
    );
    assert.deepEqual(
      rows.map((r) => [r.event_id, r.seq, r.tag]),
      [
        ["a2", 2n, "mine"],
        ["a3", 3n, "mine"],
        ["b1", 1n, "mine"],
      ],
    );
    assert.equal((await outbox.state(db, "a"))?.lastSeq, 3n);
    assert.throws(() => outbox.enqueueManyStatement([], { offset: 0, prefix: "" }), RangeError);
    assert.throws(
      () => outbox.enqueueManyStatement([keyed("a", "x")], { offset: 0, prefix: "bad;" }),
      RangeError,
    );
  });

  it("ordered: enqueueMany checks every event before any statement: a bad one anywhere is named by field and index, and nothing of the batch is written", async (db) => {
    const outbox = await ordered(db);
    const events = `ob_events_${tables}`;
    const bad: [Partial<NewOrderedEvent>, string][] = [
      [{ orderingKey: "" }, "orderingKey"],
      [{ orderingKey: "k".repeat(256) }, "orderingKey"],
      [{ type: "Payment Captured" }, "type"],
      [{ payload: [] as unknown as Record<string, unknown> }, "payload"],
      [{ eventId: "" }, "eventId"],
    ];
    for (const [fault, field] of bad) {
      const batch = [keyed("x", "x1"), keyed("y", "y1"), { ...keyed("x", "x2"), ...fault }];
      await assert.rejects(
        outbox.enqueueMany(noQuery, batch),
        (err) =>
          outboxErrors.is(err, "OUTBOX_EVENT_INVALID") &&
          err.fields.field === field &&
          err.fields.index === 2,
        field,
      );
    }
    const oversized = [keyed("x", "x1"), keyed("x", "x2", { x: "x".repeat(200) })];
    await assert.rejects(
      outbox.enqueueMany(noQuery, oversized, { maxPayloadBytes: 100 }),
      (err) =>
        outboxErrors.is(err, "OUTBOX_PAYLOAD_TOO_LARGE") &&
        err.fields.maxBytes === 100 &&
        err.fields.index === 1,
    );
    const tooMany = Array.from({ length: MAX_OUTBOX_BATCH + 1 }, (_, i) => keyed("x", `e${i}`));
    await assert.rejects(outbox.enqueueMany(noQuery, tooMany), RangeError);
    // The refusal leaves the caller's transaction usable: it commits its other work, none of the batch.
    await db.transaction(async (tx) => {
      await outbox.enqueue(tx, keyed("x", "kept"), { nowMs: T0 });
      await assert.rejects(
        outbox.enqueueMany(tx, [keyed("x", "x1"), keyed("y", "y1"), { ...keyed("x", "x2"), type: "" }]),
        (err) => outboxErrors.is(err, "OUTBOX_EVENT_INVALID"),
      );
    });
    assert.equal(await eventCount(db, events), 1n);
    assert.equal((await outbox.state(db, "x"))?.lastSeq, 1n);
    assert.equal(await outbox.state(db, "y"), undefined);
  });

  it("ordered: enqueueMany refuses an event id given twice in the call before any statement, and one written before", async (db) => {
    const outbox = await ordered(db);
    const events = `ob_events_${tables}`;
    await assert.rejects(
      outbox.enqueueMany(noQuery, [keyed("x", "twice"), keyed("y", "other"), keyed("y", "twice")]),
      (err) =>
        outboxErrors.is(err, "OUTBOX_EVENT_DUPLICATE") &&
        err.fields.eventId === "twice" &&
        err.fields.index === 2,
    );
    await db.transaction((tx) => outbox.enqueue(tx, keyed("x", "old"), { nowMs: T0 }));
    await assert.rejects(
      db.transaction((tx) => outbox.enqueueMany(tx, [keyed("x", "new"), keyed("z", "old")], { nowMs: T0 })),
      (err) => outboxErrors.is(err, "OUTBOX_EVENT_DUPLICATE") && err.fields.eventId === "old",
    );
    assert.equal(await eventCount(db, events), 1n);
    assert.equal((await outbox.state(db, "x"))?.lastSeq, 1n, "the statement's bump went with it");
    assert.equal(await outbox.state(db, "z"), undefined);
  });

  it("ordered: enqueueMany in a rolled-back transaction leaves nothing, and nothing is published", async (db) => {
    const outbox = await ordered(db);
    const events = `ob_events_${tables}`;
    await assert.rejects(
      db.transaction(async (tx) => {
        const written = await outbox.enqueueMany(tx, [keyed("a", "a1"), keyed("b", "b1"), keyed("a", "a2")], {
          nowMs: T0,
        });
        assert.equal(written.length, 3);
        throw new Error("the group commit failed");
      }),
      /group commit failed/,
    );
    assert.equal(await eventCount(db, events), 0n);
    assert.equal(await outbox.state(db, "a"), undefined);
    assert.equal(await outbox.state(db, "b"), undefined);
    const recorder = new Recorder<OrderedOutboxEvent>();
    assert.equal(
      (await relayOf(db, new ManualClock(T0), { outbox, publisher: recorder }).runOnce()).claimed,
      0,
    );
  });

  it("ordered: enqueueMany of nothing returns [] without a statement", async (db) => {
    const outbox = await ordered(db);
    assert.deepEqual(await outbox.enqueueMany(noQuery, []), []);
  });

  it("ordered: concurrent enqueueMany transactions over overlapping keys both commit, each key's seqs distinct and gap-free", async (db) => {
    const outbox = await ordered(db);
    const held = keyed("c", "held");
    const first = [keyed("a", "f1"), keyed("c", "f2"), keyed("b", "f3"), keyed("a", "f4")];
    const second = [keyed("b", "s1"), keyed("a", "s2"), keyed("b", "s3")];
    let written: { eventId: string; seq: bigint }[][];
    if (db.engine === "postgres") {
      // A third transaction holds c. In key order, `first` locks a and b and waits on c, and
      // `second` waits on a. In input order `second` would hold b, and `first`, given c, would
      // wait on it while `second` waits on a: a deadlock.
      const release = latch();
      const holding = latch();
      const holder = db.transaction(async (tx) => {
        await outbox.enqueue(tx, held, { nowMs: T0 });
        holding.open();
        await release.promise;
      });
      await holding.promise;
      const pids: number[] = [];
      const batch = (events: NewOrderedEvent[]) =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
          pids.push(rows[0]!.pid);
          return outbox.enqueueMany(tx, events, { nowMs: T0 });
        });
      const blocked = (n: number) =>
        eventually(
          async () => {
            if (pids.length < n) return false;
            const { rows } = await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM unnest($1::int[]) AS p(pid) WHERE cardinality(pg_blocking_pids(p.pid)) > 0",
              [pids],
            );
            return rows[0]!.n === n;
          },
          { what: `${n} batches waiting on a stream lock` },
        );
      const firstDone = batch(first);
      await blocked(1);
      const secondDone = batch(second);
      await blocked(2);
      release.open();
      await holder;
      written = await Promise.all([firstDone, secondDone]);
    } else {
      // PGlite runs one transaction at a time: the same batches, one after the other.
      await db.transaction((tx) => outbox.enqueue(tx, held, { nowMs: T0 }));
      written = await Promise.all(
        [first, second].map((events) =>
          db.transaction((tx) => outbox.enqueueMany(tx, events, { nowMs: T0 })),
        ),
      );
    }
    assert.deepEqual(written, [
      [
        { eventId: "f1", seq: 1n },
        { eventId: "f2", seq: 2n },
        { eventId: "f3", seq: 1n },
        { eventId: "f4", seq: 2n },
      ],
      [
        { eventId: "s1", seq: 2n },
        { eventId: "s2", seq: 3n },
        { eventId: "s3", seq: 3n },
      ],
    ]);
    for (const [key, lastSeq] of [
      ["a", 3n],
      ["b", 3n],
      ["c", 2n],
    ] as const)
      assert.equal((await outbox.state(db, key))?.lastSeq, lastSeq, key);
  });

  it("ordered: several relays with small claims keep per-key commit order", async (db) => {
    const outbox = await ordered(db);
    const keys = ["a", "b", "c", "d", "e"];
    const committed = new Map<string, string[]>(keys.map((k) => [k, []]));
    for (let i = 0; i < 60; i++) {
      const key = keys[(i * 7) % keys.length]!;
      const { eventId } = await db.transaction((tx) =>
        outbox.enqueue(tx, { orderingKey: key, type: "a.b", payload: { i } }, { nowMs: T0 }),
      );
      committed.get(key)!.push(eventId);
    }
    const clock = new ManualClock(T0);
    const recorder = new Recorder<OrderedOutboxEvent>();
    const relays = [1, 2, 3].map((n) =>
      relayOf(db, clock, {
        outbox,
        publisher: recorder,
        owner: `relay-${n}`,
        maxInFlightKeys: 2,
        maxBatch: 3,
      }),
    );
    for (let round = 0; round < 100; round++) {
      const rounds = await Promise.all(relays.map((r) => r.runOnce()));
      if (rounds.every((r) => r.claimed === 0)) break;
    }
    for (const key of keys)
      assert.deepEqual(
        recorder.events.filter((e) => e.orderingKey === key).map((e) => e.eventId),
        committed.get(key),
        key,
      );
    assert.equal(recorder.events.length, 60, "no crash, no expiry: each event once");
    for (const key of keys) {
      const state = await outbox.state(db, key);
      assert.equal(state?.publishedSeq, state?.lastSeq);
    }
  });

  it("ordered: a relay killed between publish and mark has the key republished after its lease, same ids, same order", async (db) => {
    const outbox = await ordered(db);
    for (let i = 0; i < 3; i++)
      await db.transaction((tx) =>
        outbox.enqueue(tx, { orderingKey: "k", type: "a.b", payload: { i } }, { nowMs: T0 }),
      );
    const clock = new ManualClock(T0);
    const recorder = new Recorder<OrderedOutboxEvent>();
    const hang = latch();
    const delivered = latch();
    const dying = relayOf(db, clock, {
      outbox,
      owner: "dying",
      publishTimeoutMs: 20_000,
      publisher: {
        async publish(event) {
          await recorder.publish(event);
          delivered.open();
          await hang.promise;
          throw new Error("killed");
        },
      },
    });
    const survivor = relayOf(db, clock, { outbox, publisher: recorder, owner: "survivor" });
    const dyingRound = dying.runOnce();
    await delivered.promise;
    assert.equal((await survivor.runOnce()).claimed, 0, "the live lease keeps the key to one relay");
    clock.advance(LEASE_MS);
    assert.deepEqual(await survivor.runOnce(), { claimed: 1, published: 3, failed: 0, lost: 0, released: 0 });
    hang.open();
    const late = await dyingRound;
    assert.equal(late.lost, 1, "the killed relay's late write is fenced off");
    assert.equal((await outbox.state(db, "k"))?.publishedSeq, 3n);
    const ids = recorder.ids();
    assert.equal(ids.length, 4, "the first event twice: at least once");
    assert.equal(ids[0], ids[1], "under the same event id");
    assert.deepEqual(
      recorder.events.slice(1).map((e) => e.seq),
      [1n, 2n, 3n],
    );
  });

  it("unordered: a row held back by dueInMs is the writer's to publish; the relay publishes it only once the writer has not marked it within that time", async (db) => {
    const outbox = await unordered(db);
    const clock = new ManualClock(T0);
    await db.transaction(async (tx) => {
      await outbox.enqueue(
        tx,
        { eventId: "marked", columns: { tenant_id: "t" } },
        { nowMs: T0, dueInMs: 5_000 },
      );
      await outbox.enqueue(
        tx,
        { eventId: "stranded", columns: { tenant_id: "t" } },
        { nowMs: T0, dueInMs: 5_000 },
      );
    });
    const recorder = new Recorder<UnorderedRow>();
    const relay = relayOf(db, clock, { outbox, publisher: recorder });
    assert.equal((await relay.runOnce()).claimed, 0, "not due before dueInMs");
    // The writer published "marked" itself; it died before publishing "stranded".
    assert.equal(await outbox.markPublishedByWriter(db, "marked", T0 + 10), true);
    assert.equal(await outbox.markPublishedByWriter(db, "marked", T0 + 20), false, "marked once");
    clock.advance(5_000);
    await drain(relay);
    assert.deepEqual(recorder.ids(), ["stranded"], "the relay publishes only what the writer did not");
    assert.equal(
      await outbox.markPublishedByWriter(db, "stranded", clock.nowMs()),
      false,
      "already published",
    );
    // A row a relay holds is not the writer's to mark: the relay's publish stands.
    await db.transaction((tx) =>
      outbox.enqueue(tx, { eventId: "held", columns: { tenant_id: "t" } }, { nowMs: clock.nowMs() }),
    );
    const [held] = await outbox.claim(db, { owner: "r", nowMs: clock.nowMs(), leaseMs: LEASE_MS, limit: 10 });
    assert.equal(held?.event?.eventId, "held");
    assert.equal(await outbox.markPublishedByWriter(db, "held", clock.nowMs()), false);
    await assert.rejects(
      db.transaction((tx) =>
        outbox.enqueue(tx, { eventId: "x", columns: { tenant_id: "t" } }, { nowMs: T0, dueInMs: -1 }),
      ),
      (err: unknown) => outboxErrors.is(err, "OUTBOX_EVENT_INVALID"),
    );
  });

  it("unordered: pruning deletes published rows older than the bound, oldest first, never an unpublished one", async (db) => {
    const outbox = await unordered(db);
    const clock = new ManualClock(T0);
    for (const id of ["a", "b", "c"])
      await db.transaction((tx) =>
        outbox.enqueue(tx, { eventId: id, columns: { tenant_id: "t" } }, { nowMs: T0 }),
      );
    const recorder = new Recorder<UnorderedRow>();
    await drain(relayOf(db, clock, { outbox, publisher: recorder }));
    await db.transaction((tx) =>
      outbox.enqueue(tx, { eventId: "pending", columns: { tenant_id: "t" } }, { nowMs: T0 }),
    );
    assert.equal(await outbox.prunePublished(db, T0, 10), 0, "published at T0: not before T0");
    assert.equal(await outbox.prunePublished(db, T0 + 1, 2), 2, "bounded by limit");
    assert.equal(await outbox.prunePublished(db, T0 + 1, 10), 1);
    assert.equal(await outbox.prunePublished(db, T0 + 60_000, 10), 0, "the unpublished row stays");
    assert.deepEqual(await outbox.lag(db, T0), { unpublished: 1n, parked: 0n, oldestAgeMs: 0 });
    await assert.rejects(outbox.prunePublished(db, T0, 0), RangeError);
  });

  it("unordered: a relay killed between publish and mark has the row republished after its lease, same id", async (db) => {
    const outbox = await unordered(db);
    await db.transaction((tx) =>
      outbox.enqueue(tx, { eventId: "e1", columns: { tenant_id: "t" } }, { nowMs: T0 }),
    );
    const clock = new ManualClock(T0);
    // The killed relay: claims and publishes, never marks.
    const [claimed] = await outbox.claim(db, { owner: "killed", nowMs: T0, leaseMs: LEASE_MS, limit: 10 });
    assert.equal(claimed?.event?.eventId, "e1");
    const recorder = new Recorder<UnorderedRow>();
    const survivor = relayOf(db, clock, { outbox, publisher: recorder });
    assert.equal((await survivor.runOnce()).claimed, 0, "the lease still holds the row");
    clock.advance(LEASE_MS);
    assert.deepEqual(await survivor.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
    assert.deepEqual(recorder.ids(), ["e1"]);
    assert.equal(recorder.events[0]!.publishCount, 2, "the second publish of the same event id");
    assert.equal(await outbox.markPublished(db, claimed!, claimed!.event!, { nowMs: clock.nowMs() }), false);
  });

  it("unordered: disjoint claims, a failed publish backs off alone, a lease that cannot cover a publish gives the row back", async (db) => {
    const outbox = await unordered(db);
    for (let i = 0; i < 40; i++)
      await db.transaction((tx) =>
        outbox.enqueue(tx, { eventId: `e${i}`, columns: { tenant_id: "t" } }, { nowMs: T0 }),
      );
    const claims = await Promise.all(
      ["r1", "r2", "r3"].map((owner) =>
        outbox.claim(db, { owner, nowMs: T0, leaseMs: LEASE_MS, limit: 1_000 }),
      ),
    );
    const ids = claims.flat().map((c) => c.label);
    assert.equal(new Set(ids).size, 40, "no row claimed twice");
    for (const c of claims.flat()) assert.equal(await outbox.release(db, c, T0), true);

    const clock = new ManualClock(T0);
    const recorder = new Recorder<UnorderedRow>();
    let failing = "e1";
    const relay = relayOf(db, clock, {
      outbox,
      maxBatch: 3,
      publisher: {
        async publish(event) {
          if (event.eventId === failing) {
            failing = "";
            throw new Error("broker unavailable");
          }
          await recorder.publish(event);
        },
      },
    });
    assert.deepEqual(await relay.runOnce(), { claimed: 3, published: 2, failed: 1, lost: 0, released: 0 });
    const { rows } = await db.query<{ next_attempt_at: Date; last_error: string; attempts: number }>(
      `SELECT next_attempt_at, last_error, attempts FROM ob_rows_${tables} WHERE event_id = 'e1'`,
    );
    assert.equal(rows[0]!.next_attempt_at.getTime(), T0 + 1_000);
    assert.equal(rows[0]!.attempts, 1);
    assert.match(rows[0]!.last_error, /broker unavailable/);

    const slow = relayOf(db, clock, {
      outbox,
      maxBatch: 3,
      leaseMs: 1_500,
      publishTimeoutMs: 500,
      publisher: {
        async publish(event) {
          clock.advance(600);
          await recorder.publish(event);
        },
      },
    });
    const round = await slow.runOnce();
    assert.deepEqual(round, { claimed: 3, published: 2, failed: 0, lost: 0, released: 1 });
  });

  it("both: a head that keeps failing is parked after maxAttempts and stays parked until resumed", async (db) => {
    const keyed = await ordered(db);
    const rows = await unordered(db);
    await db.transaction(async (tx) => {
      await keyed.enqueue(tx, { orderingKey: "k", type: "a.b", payload: {} }, { nowMs: T0 });
      await keyed.enqueue(tx, { orderingKey: "k", type: "a.b", payload: {} }, { nowMs: T0 });
      await rows.enqueue(tx, { eventId: "r1", columns: { tenant_id: "t" } }, { nowMs: T0 });
    });
    const clock = new ManualClock(T0);
    let healthy = false;
    const published: string[] = [];
    const publisher = {
      async publish(event: OutboxEventBase) {
        if (!healthy) throw new Error("consumer gone");
        published.push(event.eventId);
      },
    };
    const relays = [
      relayOf(db, clock, { outbox: keyed, publisher, maxAttempts: 2 }),
      relayOf<UnorderedRow>(db, clock, { outbox: rows, publisher, maxAttempts: 2 }),
    ] as const;
    for (const relay of relays) assert.equal((await relay.runOnce()).failed, 1);
    clock.advance(1_000);
    for (const relay of relays) assert.equal((await relay.runOnce()).failed, 1);
    assert.equal((await keyed.state(db, "k"))?.parked, true);
    assert.equal((await keyed.state(db, "k"))?.attempts, 2);
    assert.equal((await rows.lag(db, clock.nowMs())).parked, 1n);
    clock.advance(86_400_000);
    for (const relay of relays)
      assert.equal((await relay.runOnce()).claimed, 0, "a parked item is not retried");
    healthy = true;
    assert.equal(await keyed.resume(db, "k", clock.nowMs()), true);
    assert.equal(await rows.resume(db, "r1", clock.nowMs()), true);
    assert.equal(await keyed.resume(db, "k", clock.nowMs()), false, "resuming twice does nothing");
    for (const relay of relays) await drain(relay);
    assert.equal(published.length, 3);
    assert.equal((await keyed.state(db, "k"))?.attempts, 0);
  });

  it("ordered: markEvery marks a run of events once — every n events, at the batch's end, and before a failure is recorded — in seq order, all published", async (db) => {
    const outbox = await ordered(db);
    const events = `ob_events_${tables}`;
    const ids = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"];
    await db.transaction((tx) =>
      outbox.enqueueMany(
        tx,
        ids.map((id) => keyed("k", id)),
        { nowMs: T0 },
      ),
    );
    const marks: string[] = [];
    // Counts the marks: the statements that move the stream's published_seq.
    const counting: Database = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop === "query")
          return async (...args: unknown[]) => {
            if (String(args[0]).includes("SET published_seq")) marks.push(String((args[1] as unknown[])[3]));
            return (Reflect.get(target, prop, receiver) as (...a: unknown[]) => Promise<unknown>).apply(
              target,
              args,
            );
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const seen: string[] = [];
    let failOn: string | undefined = "e6";
    const publisher = {
      async publish(event: OrderedOutboxEvent) {
        if (event.eventId === failOn) {
          failOn = undefined;
          throw new Error("consumer down");
        }
        seen.push(event.eventId);
      },
    };
    const clock = new ManualClock(T0);
    const relay = relayOf(counting, clock, { outbox, publisher, markEvery: 3 });
    const first = await relay.runOnce();
    assert.deepEqual([first.published, first.failed], [5, 1]);
    assert.deepEqual(marks, ["3", "5"], "after e3, then e4–e5 before the failure of e6 is recorded");
    const stream = await outbox.state(db, "k");
    assert.deepEqual([stream?.publishedSeq, stream?.attempts], [5n, 1]);
    clock.advance(60_000);
    const second = await relay.runOnce();
    assert.deepEqual([second.published, second.failed], [2, 0]);
    assert.deepEqual(marks, ["3", "5", "7"], "the rest in one mark, at the batch's end");
    assert.deepEqual(seen, ids, "each once, in order");
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${events} WHERE ordering_key = 'k' AND published_at IS NULL`,
    );
    assert.equal(rows[0]!.n, 0, "every event of a marked run is recorded published");
    assert.throws(() => relayOf(db, clock, { outbox, publisher, markEvery: 0 }), RangeError);
  });

  it("both: a failure that strands claims gives them back before the next claim, not after the lease", async (db) => {
    const keyed = await ordered(db);
    const rows = await unordered(db);
    await db.transaction(async (tx) => {
      await keyed.enqueue(tx, { orderingKey: "k", type: "a.b", payload: {} }, { nowMs: T0 });
      await rows.enqueue(tx, { eventId: "r1", columns: { tenant_id: "t" } }, { nowMs: T0 });
    });
    const clock = new ManualClock(T0);
    let down = true;
    // A database that fails every mark while `down` (the answer to the claim arrived).
    const flaky: Database = new Proxy(db, {
      get(target, prop, receiver) {
        // The ordered mark is the only transaction; the unordered one sets published_at.
        if (prop === "transaction" || prop === "query")
          return async (...args: unknown[]) => {
            if (down && (prop === "transaction" || String(args[0]).includes("SET published_at")))
              throw new Error("connection lost");
            return (Reflect.get(target, prop, receiver) as (...a: unknown[]) => Promise<unknown>).apply(
              target,
              args,
            );
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const seen: string[] = [];
    const publisher = {
      async publish(event: OutboxEventBase) {
        seen.push(event.eventId);
      },
    };
    const errors: string[] = [];
    const keyedRelay = relayOf(flaky, clock, {
      outbox: keyed,
      publisher,
      onError: (_e, label) => errors.push(label ?? "-"),
    });
    const rowRelay = relayOf<UnorderedRow>(flaky, clock, { outbox: rows, publisher });
    assert.equal((await keyedRelay.runOnce()).claimed, 1);
    assert.deepEqual(errors, ["k"], "the key's task reports its failure");
    await assert.rejects(rowRelay.runOnce(), /connection lost/);
    down = false;
    // Same instant: both leases still run; only the give-back makes the items due.
    assert.deepEqual(await keyedRelay.runOnce(), {
      claimed: 1,
      published: 1,
      failed: 0,
      lost: 0,
      released: 1,
    });
    assert.deepEqual(await rowRelay.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 1 });
    assert.equal(seen.length, 4, "each published twice: at least once");
    assert.equal((await keyedRelay.runOnce()).released, 0, "nothing stranded any more");
  });

  it("the relay refuses knobs out of bounds", async (db) => {
    const keyed = await ordered(db);
    const rows = await unordered(db);
    const publisher = new Recorder<OutboxEventBase>();
    const bad: Partial<OutboxRelayOptions<OutboxEventBase>>[] = [
      { leaseMs: 1_000, publishTimeoutMs: 1_000 },
      { leaseMs: 0 },
      { leaseMs: 86_400_001 },
      { maxBatch: 0 },
      { maxBatch: 1_001 },
      { maxInFlightKeys: 0 },
      { maxInFlightKeys: 1.5 },
      { pollIntervalMs: 0 },
      { retryBaseMs: 0 },
      { retryBaseMs: 2_000, retryCapMs: 1_000 },
      { maxAttempts: 0 },
      { maxAttempts: Number.NaN },
      { retryJitter: "some" as "none" },
    ];
    for (const options of bad)
      assert.throws(
        () => new OutboxRelay(db, { outbox: keyed, publisher, ...options }),
        RangeError,
        JSON.stringify(options),
      );
    assert.throws(() => new OutboxRelay(db, { outbox: rows, publisher, maxInFlightKeys: 2 }), RangeError);
    new OutboxRelay(db, { outbox: rows, publisher, maxAttempts: Number.POSITIVE_INFINITY });
    await assert.rejects(keyed.claim(db, { owner: "o", nowMs: T0, leaseMs: LEASE_MS, limit: 0 }), RangeError);
    await assert.rejects(
      rows.claim(db, { owner: "o", nowMs: T0, leaseMs: LEASE_MS, limit: 1_001 }),
      RangeError,
    );
    assert.throws(() => new OrderedOutbox({ streams: "bad name" }));
    assert.throws(() => new UnorderedOutbox({ columns: ["x; DROP TABLE y"] }));
  });
});
