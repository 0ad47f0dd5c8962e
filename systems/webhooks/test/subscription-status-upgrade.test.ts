/**
 * Migration 008 upgrades a data directory made by the migrations before it (001–007): an
 * active subscription becomes `active`, one the worker quarantined (its reason starts
 * `quarantined:`) becomes `quarantined`, one the tenant or a 410 switched off becomes
 * `disabled`, each keeping its reason; and `active` and `status` can never disagree after it.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { migrateWebhookStore, WEBHOOK_MIGRATIONS_DIR } from "../src/store/migrate.ts";

const T0 = new Date(Date.UTC(2026, 0, 1));
const MAX_OLD = 7;
const subId = (n: number) => `sub_${String(n).padStart(32, "0")}`;

test("008 gives every existing subscription the status its active flag and reason say", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "casebook-webhooks-upgrade-008-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dataDir = join(root, "webhooks");
  const old = await openDatabase({ system: "webhooks", dataDir });
  try {
    const files = (await readMigrations(WEBHOOK_MIGRATIONS_DIR)).filter(
      (m) => Number(m.name.slice(0, 3)) <= MAX_OLD,
    );
    await applyMigrations(old, files);
    await old.query("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Acme', $1)", [T0]);
    const rows: [number, boolean, string | null][] = [
      [1, true, null],
      [2, false, "quarantined: 5 client errors in a row"],
      [3, false, "the endpoint answered 410 Gone"],
    ];
    for (const [n, active, reason] of rows)
      await old.query(
        `INSERT INTO subscriptions (id, tenant_id, url, active, disabled_reason, created_at, updated_at)
         VALUES ($1, 't1', 'https://hooks.example.com/in', $2, $3, $4, $4)`,
        [subId(n), active, reason, T0],
      );
  } finally {
    await old.close();
  }

  const db = await openDatabase({ system: "webhooks", dataDir });
  t.after(() => db.close());
  const report = await migrateWebhookStore(db);
  assert.ok(report.applied.includes("008_subscription_status"), report.applied.join(","));
  const { rows } = await db.query<{ id: string; status: string; status_reason: string | null }>(
    "SELECT id, status, status_reason FROM subscriptions ORDER BY id",
  );
  assert.deepEqual(rows, [
    { id: subId(1), status: "active", status_reason: null },
    { id: subId(2), status: "quarantined", status_reason: "quarantined: 5 client errors in a row" },
    { id: subId(3), status: "disabled", status_reason: "the endpoint answered 410 Gone" },
  ]);
  await assert.rejects(
    db.query("UPDATE subscriptions SET status = 'quarantined' WHERE id = $1", [subId(1)]),
    "active and status cannot disagree",
  );
});
