/**
 * Migration 011 upgrades a data directory made by the migrations before it (001–008): the
 * outbox's streams, written in the old lease shape (`lease_until`, `lease_token`) — one key due,
 * one leased by a relay of the previous version in the middle of its batch — relay after the
 * upgrade (PY-11): the due key at once, the leased key only after its lease ends (its old lease
 * survives the rename), from where it stopped, in seq order, under the same event ids.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { applyMigrations, readMigrations, runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { orderedOutboxDdl } from "@casebook/infra/sql/outbox-ddl";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { tableShape } from "@casebook/lab/table-shape";
import { type OutboxEvent, streamState } from "../src/store/outbox.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";

const T0 = Date.UTC(2026, 0, 1);
const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** The migrations a data directory of the previous version has: up to 008. */
const MAX_OLD = 8;

/** A table's columns as the catalog has them (name, type, nullability), by name. */
/** The table's columns (name, type, nullability, default), by name: column order is not shape. */
async function columnsOf(db: Database, table: string): Promise<string[]> {
  return (await tableShape(db, table)).columns.sort();
}

test("011 upgrades outbox streams written in the old lease shape, and their events relay in order (PY-11)", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "casebook-payments-upgrade-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dataDir = join(root, "payments");
  const old = await openDatabase({ system: "payments", dataDir });
  try {
    const files = (await readMigrations(MIGRATIONS_DIR)).filter((m) => Number(m.name.slice(0, 3)) <= MAX_OLD);
    assert.equal(files.length, MAX_OLD);
    await applyMigrations(old, files);
    const at = new Date(T0);
    // acct:due — two events, nothing published, nobody holds it.
    await old.query(
      "INSERT INTO outbox_streams (ordering_key, last_seq, next_attempt_at) VALUES ('acct:due', 2, $1)",
      [at],
    );
    // acct:leased — three events, the first published, leased by an old relay until T0 + 30 s.
    await old.query(
      `INSERT INTO outbox_streams (ordering_key, last_seq, published_seq, lease_owner, lease_until, lease_token, next_attempt_at)
       VALUES ('acct:leased', 3, 1, 'relay-old', $2, 4, $1)`,
      [at, new Date(T0 + 30_000)],
    );
    const events: [string, number][] = [
      ["acct:due", 1],
      ["acct:due", 2],
      ["acct:leased", 1],
      ["acct:leased", 2],
      ["acct:leased", 3],
    ];
    for (const [key, seq] of events)
      await old.query(
        `INSERT INTO outbox_events (ordering_key, seq, event_id, type, payload, created_at, published_at)
         VALUES ($1, $2, $3, 'payment.captured', '{"amountMinor":"5000"}', $4, $5)`,
        [key, seq, `${key}#${seq}`, at, key === "acct:leased" && seq === 1 ? at : null],
      );
  } finally {
    await old.close();
  }

  const db = await openDatabase({ system: "payments", dataDir });
  t.after(() => db.close());
  const report = await runMigrations(db, { dir: MIGRATIONS_DIR });
  assert.ok(report.applied.includes("011_outbox_lease_vocabulary"), report.applied.join(","));
  const { rows: leased } = await db.query<{
    lease_owner: string;
    lease_expires_at: Date;
    lease_version: bigint;
  }>(
    "SELECT lease_owner, lease_expires_at, lease_version FROM outbox_streams WHERE ordering_key = 'acct:leased'",
  );
  assert.deepEqual(leased[0], {
    lease_owner: "relay-old",
    lease_expires_at: new Date(T0 + 30_000),
    lease_version: 4n,
  });

  await db.exec(orderedOutboxDdl({ streams: "shape_streams", events: "shape_events" }));
  assert.deepEqual(
    await columnsOf(db, "outbox_streams"),
    await columnsOf(db, "shape_streams"),
    "the shared streams",
  );
  assert.deepEqual(
    await columnsOf(db, "outbox_events"),
    await columnsOf(db, "shape_events"),
    "the shared events",
  );

  const clock = new ManualClock(T0 + 1_000);
  const published: OutboxEvent[] = [];
  const relay = new OutboxRelay(db, {
    clock,
    publisher: {
      async publish(event) {
        published.push(event);
      },
    },
    onError: (err) => {
      throw err;
    },
  });
  assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 2, failed: 0, lost: 0, released: 0 });
  assert.equal((await relay.runOnce()).claimed, 0, "the old relay's lease still holds its key");
  clock.advance(29_000);
  assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 2, failed: 0, lost: 0, released: 0 });
  assert.deepEqual(
    published.map((e) => e.eventId),
    ["acct:due#1", "acct:due#2", "acct:leased#2", "acct:leased#3"],
  );
  assert.deepEqual(published[0]!.payload, { amountMinor: "5000" });
  for (const key of ["acct:due", "acct:leased"]) {
    const state = await streamState(db, key);
    assert.equal(state?.publishedSeq, state?.lastSeq, key);
  }
});
