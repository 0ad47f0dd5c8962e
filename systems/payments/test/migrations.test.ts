/** The system's migrations, all of them, in order, on both engines — and a second run changes nothing. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";

const dir = new URL("../src/store/migrations/", import.meta.url);
const expected = [
  "001_ledger",
  "002_idempotency",
  "003_payments",
  "004_outbox",
  "005_merchants",
  "006_reconciliation",
  "007_ledger_write",
  "008_capture_refund_retry_fees",
  "011_outbox_lease_vocabulary",
];

test("every migration applies in order on PGlite, once", async () => {
  const db = await openDatabase({ system: "payments", dataDir: "memory://" });
  try {
    assert.deepEqual((await runMigrations(db, { dir })).applied, expected);
    assert.deepEqual((await runMigrations(db, { dir })).applied, []);
  } finally {
    await db.close();
  }
});

test("every migration applies in order on PostgreSQL, once", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const schema = uniqueName("payments_migrations");
  const db = await openDatabase({ system: "payments", url, schema });
  try {
    assert.deepEqual((await runMigrations(db, { dir })).applied, expected);
    assert.deepEqual((await runMigrations(db, { dir })).applied, []);
  } finally {
    await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await db.close();
  }
});
