/**
 * Migration 007 upgrades a data directory made by the migrations before it (001–004): the
 * outbox's rows, written in the old lease shape (`lease_until`, `lease_token`) — one published,
 * one due, one leased by a relay of the previous version — relay after the upgrade: the due
 * row at once, the leased one only after its lease ends (its old lease survives the rename),
 * each under its event id, the published one never again.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { unorderedOutboxDdl } from "@casebook/infra/sql/outbox-ddl";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { tableShape } from "@casebook/lab/table-shape";
import { migrateWebhookStore, WEBHOOK_MIGRATIONS_DIR } from "../src/store/migrate.ts";
import { OutboxRelay, type PublishedEvent } from "../src/workers/outbox-relay.ts";

const T0 = Date.UTC(2026, 0, 1);
/** The migrations a data directory of the previous version has: up to 004. */
const MAX_OLD = 4;

/** A table's columns as the catalog has them (name, type, nullability), by name. */
/** The table's columns (name, type, nullability, default), by name: column order is not shape. */
async function columnsOf(db: Database, table: string): Promise<string[]> {
  return (await tableShape(db, table)).columns.sort();
}

const eventId = (n: number) => `msg_${String(n).padStart(32, "0")}`;

test("007 upgrades an outbox written in the old lease shape, and its rows relay (WH-07, WH-14)", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "casebook-webhooks-upgrade-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dataDir = join(root, "webhooks");
  const old = await openDatabase({ system: "webhooks", dataDir });
  try {
    const files = (await readMigrations(WEBHOOK_MIGRATIONS_DIR)).filter(
      (m) => Number(m.name.slice(0, 3)) <= MAX_OLD,
    );
    assert.equal(files.length, MAX_OLD);
    await applyMigrations(old, files);
    const at = new Date(T0);
    await old.query("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Acme', $1)", [at]);
    for (const n of [1, 2, 3])
      await old.query(
        `INSERT INTO events (id, tenant_id, type, payload, payload_hash, payload_bytes, payload_expires_at, created_at)
         VALUES ($1, 't1', 'invoice.paid', '{}', repeat('0', 64), 2, $2, $2)`,
        [eventId(n), at],
      );
    await old.query(
      `INSERT INTO outbox (event_id, tenant_id, created_at, next_attempt_at, publish_count, published_at)
       VALUES ($1, 't1', $2, $2, 1, $2)`,
      [eventId(1), at],
    );
    await old.query(
      "INSERT INTO outbox (event_id, tenant_id, created_at, next_attempt_at) VALUES ($1, 't1', $2, $2)",
      [eventId(2), at],
    );
    // Leased by a relay of the old code until T0 + 30 s; due again at its lease end.
    const leaseEnd = new Date(T0 + 30_000);
    await old.query(
      `INSERT INTO outbox (event_id, tenant_id, created_at, next_attempt_at, lease_owner, lease_until, lease_token, publish_count)
       VALUES ($1, 't1', $2, $3, 'relay-old', $3, 7, 1)`,
      [eventId(3), at, leaseEnd],
    );
  } finally {
    await old.close();
  }

  const db = await openDatabase({ system: "webhooks", dataDir });
  t.after(() => db.close());
  const report = await migrateWebhookStore(db);
  assert.ok(report.applied.includes("007_outbox_lease_vocabulary"), report.applied.join(","));
  const { rows: leased } = await db.query<{
    lease_owner: string;
    lease_expires_at: Date;
    lease_version: bigint;
  }>("SELECT lease_owner, lease_expires_at, lease_version FROM outbox WHERE event_id = $1", [eventId(3)]);
  assert.deepEqual(leased[0], {
    lease_owner: "relay-old",
    lease_expires_at: new Date(T0 + 30_000),
    lease_version: 7n,
  });

  await db.exec(unorderedOutboxDdl({ table: "outbox_shape", columns: "tenant_id text NOT NULL" }));
  assert.deepEqual(
    await columnsOf(db, "outbox"),
    await columnsOf(db, "outbox_shape"),
    "the shared outbox's columns",
  );

  const clock = new ManualClock(T0 + 1_000);
  const published: PublishedEvent[] = [];
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
  assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
  assert.deepEqual(published, [{ eventId: eventId(2), tenantId: "t1", publishCount: 1 }]);
  assert.equal((await relay.runOnce()).claimed, 0, "the old relay's lease still holds its row");
  clock.advance(29_000);
  assert.deepEqual(await relay.runOnce(), { claimed: 1, published: 1, failed: 0, lost: 0, released: 0 });
  assert.deepEqual(published.at(-1), { eventId: eventId(3), tenantId: "t1", publishCount: 2 });
  const { rows } = await db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL",
  );
  assert.equal(rows[0]!.n, 0n);
  const { rows: version } = await db.query<{ lease_version: bigint }>(
    "SELECT lease_version FROM outbox WHERE event_id = $1",
    [eventId(3)],
  );
  assert.ok(
    version[0]!.lease_version > 7n,
    "the new claim bumped the old token: a late write of the old relay loses",
  );
});
