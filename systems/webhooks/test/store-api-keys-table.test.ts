/**
 * Tenant keys live in the shared API key table (@casebook/infra/sql/api-key-table): its DDL
 * helper builds exactly the table 001_tenants.sql made by hand, and a key issued by the code
 * before the move (sha256 of `whk_<16 hex>_<43 base64url>`, inserted as 001 stored it) still
 * authenticates — no hash change, so no data migration.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { apiKeyTableSql, apiKeyUsageSql } from "@casebook/infra/sql/api-key-table";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { tableShape } from "@casebook/lab/table-shape";
import { migrateWebhookStore } from "../src/store/migrate.ts";
import { tenantKeys } from "../src/store/tenant-repository.ts";

test("the api key table helpers build exactly 001 + 009's tenant_api_keys", async (t) => {
  const migrated = await openDatabase({ system: "webhooks", dataDir: "memory://" });
  t.after(() => migrated.close());
  await migrateWebhookStore(migrated);
  const helper = await openDatabase({ system: "webhooks", dataDir: "memory://" });
  t.after(() => helper.close());
  await helper.exec("CREATE TABLE tenants (id text PRIMARY KEY)");
  await helper.exec(
    apiKeyTableSql({
      table: "tenant_api_keys",
      ownerColumn: "tenant_id",
      ownerTable: "tenants",
      ownerIndex: "tenant_api_keys_tenant",
      scheme: tenantKeys.scheme,
    }),
  );
  await helper.exec(apiKeyUsageSql({ table: "tenant_api_keys" }));
  assert.deepEqual(
    await tableShape(helper, "tenant_api_keys"),
    await tableShape(migrated, "tenant_api_keys"),
  );
});

test("a key stored by the code before the move still authenticates", async (t) => {
  const db = await openDatabase({ system: "webhooks", dataDir: "memory://" });
  t.after(() => db.close());
  await migrateWebhookStore(db);
  const key = `whk_00112233445566ff_${"Qx-_".repeat(10)}abc`;
  const oldHash = createHash("sha256").update(key, "utf8").digest("hex");
  await db.query("INSERT INTO tenants (id, name, created_at) VALUES ('ten_old', 'Old', now())");
  await db.query(
    "INSERT INTO tenant_api_keys (prefix, tenant_id, key_hash, created_at) VALUES ($1, 'ten_old', $2, now())",
    ["whk_00112233445566ff", oldHash],
  );
  assert.equal(await tenantKeys.authenticate(db, key, Date.now()), "ten_old");
  assert.equal(await tenantKeys.authenticate(db, `${key.slice(0, -1)}d`, Date.now()), undefined);
});
