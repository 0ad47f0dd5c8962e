/**
 * The feed's idempotency keys live in the shared store (@casebook/infra/sql/idempotency-store);
 * migration 002 froze the store's DDL as SQL. The helper must still build exactly that table,
 * so the store's contract suite (packages/infra/test/sql/idempotency-*.test.ts) covers the
 * table the feed has.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { idempotencyTableSql } from "@casebook/infra/sql/idempotency-store";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { tableShape } from "@casebook/lab/table-shape";
import { FEED_IDEMPOTENCY_TABLE } from "../src/store/user-keys.ts";

test("the idempotency table helper builds exactly 002's idempotency_keys", async (t) => {
  const migrated = await openDatabase({ system: "feed", dataDir: "memory://" });
  t.after(() => migrated.close());
  await runMigrations(migrated, { dir: new URL("../src/store/migrations/", import.meta.url) });
  const helper = await openDatabase({ system: "feed", dataDir: "memory://" });
  t.after(() => helper.close());
  await helper.exec(idempotencyTableSql(FEED_IDEMPOTENCY_TABLE));
  assert.deepEqual(
    await tableShape(helper, "idempotency_keys"),
    await tableShape(migrated, "idempotency_keys"),
  );
});
