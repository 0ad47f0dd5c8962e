/**
 * Merchant keys live in the shared API key table (@casebook/infra/sql/api-key-table): its DDL
 * helper builds exactly the table 005_merchants.sql made by hand, and a key issued by the code
 * before the move (sha256 of `sk_<16 hex>_<43 base64url>`, inserted as 005 stored it) still
 * authenticates — no hash change, so no data migration.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { apiKeyTableSql, apiKeyUsageSql } from "@casebook/infra/sql/api-key-table";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { tableShape } from "@casebook/lab/table-shape";
import { merchantKeys } from "../src/store/merchant-repository.ts";

const dir = new URL("../src/store/migrations/", import.meta.url);

test("the api key table helpers build exactly 005 + 012's merchant_api_keys", async (t) => {
  const migrated = await openDatabase({ system: "payments", dataDir: "memory://" });
  t.after(() => migrated.close());
  await runMigrations(migrated, { dir });
  const helper = await openDatabase({ system: "payments", dataDir: "memory://" });
  t.after(() => helper.close());
  await helper.exec("CREATE TABLE merchants (id text PRIMARY KEY)");
  await helper.exec(
    apiKeyTableSql({
      table: "merchant_api_keys",
      ownerColumn: "merchant_id",
      ownerTable: "merchants",
      ownerIndex: "merchant_api_keys_merchant_id",
      scheme: merchantKeys.scheme,
    }),
  );
  await helper.exec(apiKeyUsageSql({ table: "merchant_api_keys" }));
  assert.deepEqual(
    await tableShape(helper, "merchant_api_keys"),
    await tableShape(migrated, "merchant_api_keys"),
  );
});

test("a key stored by the code before the move still authenticates", async (t) => {
  const db = await openDatabase({ system: "payments", dataDir: "memory://" });
  t.after(() => db.close());
  await runMigrations(db, { dir });
  const key = `sk_00112233445566ff_${"Qx-_".repeat(10)}abc`;
  const oldHash = createHash("sha256").update(key, "utf8").digest("hex");
  await db.query("INSERT INTO merchants (id, name, created_at) VALUES ('mer_old', 'Old', now())");
  await db.query(
    "INSERT INTO merchant_api_keys (prefix, merchant_id, key_hash, created_at) VALUES ($1, 'mer_old', $2, now())",
    ["sk_00112233445566ff", oldHash],
  );
  assert.equal(await merchantKeys.authenticate(db, key, Date.now()), "mer_old");
  assert.equal(await merchantKeys.authenticate(db, `${key.slice(0, -1)}d`, Date.now()), undefined);
});
