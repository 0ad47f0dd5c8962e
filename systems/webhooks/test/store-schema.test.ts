/**
 * WH-08: the data model of seed 003 is in the schema — Event(id, tenant_id, type,
 * created_at), Subscription(id, tenant_id, url, active, secret_version), Delivery(event_id,
 * subscription_id, state, next_attempt_at, attempts, lease_version), Attempt(delivery_id,
 * attempt_no, response_class, duration) — with the constraints the text leans on, on both
 * engines. Plus: migrations re-run as a no-op.
 */
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { migrateWebhookStore, WEBHOOK_MIGRATIONS_DIR } from "../src/store/migrate.ts";
import { storeBackends } from "./store-backends.ts";

async function columns(db: Database, table: string): Promise<Set<string>> {
  const { rows } = await db.query<{ column_name: string }>(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
    [table],
  );
  return new Set(rows.map((r) => r.column_name));
}

async function uniqueConstraints(db: Database, table: string): Promise<string[]> {
  const { rows } = await db.query<{ cols: string }>(
    `SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS cols
       FROM pg_constraint c
       JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord) ON true
       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
      WHERE c.conrelid = $1::regclass AND c.contype IN ('u', 'p')
      GROUP BY c.oid`,
    [table],
  );
  return rows.map((r) => r.cols).sort();
}

function hasAll(actual: Set<string>, expected: string[], table: string): void {
  for (const column of expected) assert.ok(actual.has(column), `${table}.${column} missing`);
}

contractSuite("webhook store schema", storeBackends("wh_schema"), (it) => {
  it("WH-08 Event, Subscription, Delivery and Attempt carry the text's fields", async (db) => {
    hasAll(await columns(db, "events"), ["id", "tenant_id", "type", "created_at", "payload"], "events");
    hasAll(
      await columns(db, "subscriptions"),
      ["id", "tenant_id", "url", "active", "secret_version", "event_types", "disabled_reason"],
      "subscriptions",
    );
    hasAll(
      await columns(db, "deliveries"),
      ["event_id", "subscription_id", "state", "next_attempt_at", "attempts", "lease_version", "lease_owner"],
      "deliveries",
    );
    hasAll(
      await columns(db, "attempts"),
      ["delivery_id", "attempt_no", "response_class", "duration_ms", "status", "error_phase"],
      "attempts",
    );
    hasAll(
      await columns(db, "tenants"),
      ["id", "weight", "delivery_window_s", "payload_retention_s"],
      "tenants",
    );
    hasAll(await columns(db, "tenant_api_keys"), ["prefix", "key_hash", "expires_at"], "tenant_api_keys");
    hasAll(
      await columns(db, "subscription_secrets"),
      ["version", "secret", "expires_at"],
      "subscription_secrets",
    );
    hasAll(await columns(db, "outbox"), ["event_id", "published_at", "lease_version"], "outbox");
  });

  it("WH-08 WH-09 uniqueness: one delivery per (event, subscription), one attempt per number, one event per idempotency key", async (db) => {
    assert.ok((await uniqueConstraints(db, "deliveries")).includes("event_id,subscription_id"));
    assert.ok((await uniqueConstraints(db, "attempts")).includes("delivery_id,attempt_no"));
    assert.ok((await uniqueConstraints(db, "events")).includes("tenant_id,idempotency_key"));
    assert.ok((await uniqueConstraints(db, "outbox")).includes("event_id"));
  });

  it("WH-08 the due and oldest-queued indexes exist", async (db) => {
    const { rows } = await db.query<{ indexname: string }>(
      "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'deliveries'",
    );
    const names = new Set(rows.map((r) => r.indexname));
    for (const name of ["deliveries_due", "deliveries_due_by_tenant", "deliveries_queued_by_tenant"]) {
      assert.ok(names.has(name), name);
    }
  });

  it("WH-08 the states are exactly the seven of the model", async (db) => {
    const { rows } = await db.query<{ def: string }>(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = 'deliveries'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%pending%'`,
    );
    const def = rows.map((r) => r.def).join(" ");
    for (const state of [
      "pending",
      "in_flight",
      "succeeded",
      "failed",
      "expired",
      "quarantined",
      "cancelled",
    ]) {
      assert.ok(def.includes(`'${state}'`), state);
    }
  });

  it("migrations run again as a no-op", async (db) => {
    const report = await migrateWebhookStore(db);
    assert.deepEqual(report.applied, []);
    const files = (await readdir(WEBHOOK_MIGRATIONS_DIR)).filter((f) => f.endsWith(".sql"));
    assert.equal(report.skipped.length, files.length, "every migration file was applied before");
  });
});
