/**
 * The backends the idempotency store's contract suite runs on: PGlite in memory and the real
 * PostgreSQL in a schema of its own, dropped at close (lab's sqlBackends). The table is the
 * DDL helper's (`idempotencyTableSql`), named as payments names its own, and the errors carry a
 * test area (`TEST_IDEMPOTENCY_*`): the store takes both from its system.
 */
import { defineIdempotencyErrors } from "@casebook/kit/idempotency";
import * as lab from "@casebook/lab/sql-backends";
import { uniqueName } from "@casebook/lab/test-engines";
import {
  IdempotencyStore,
  type IdempotencyStoreOptions,
  idempotencyTableSql,
} from "../../src/sql/idempotency-store.ts";
import { applyMigrations, migration } from "../../src/sql/migrations.ts";
import type { Database } from "../../src/sql/sql.ts";

export const SYSTEM = "idempotency";
export const MAX_TEST_POOL = lab.MAX_TEST_POOL;
export const TABLE = { table: "idempotency_keys", scopeColumn: "merchant_id" } as const;
export const testIdempotency = defineIdempotencyErrors("TEST");
export const idempotencyErrors = testIdempotency.registry;
export type IdempotencyErrorCode = keyof typeof idempotencyErrors.specs;

export interface IdempotencySubject {
  db: Database;
  /** A scope id no other case uses, so cases share one table without meeting. */
  merchant(label: string): string;
}

/** The store on the test table with the test codes; `options` tunes clock, lease and retention. */
export function idempotencyStore(
  db: Database,
  options: Omit<IdempotencyStoreOptions, "table" | "scopeColumn" | "errors"> = {},
): IdempotencyStore {
  return new IdempotencyStore(db, { ...TABLE, errors: testIdempotency, ...options });
}

/** Creates the idempotency table (the DDL helper's) in `db`'s schema. */
export async function migrateIdempotency(db: Database): Promise<void> {
  await applyMigrations(db, [migration("001_idempotency", idempotencyTableSql(TABLE))]);
  // A stand-in for the caller's own writes (ledger entries, saga rows) in the same transaction.
  await db.exec(
    "CREATE TABLE IF NOT EXISTS caller_effects (merchant_id text NOT NULL, key text NOT NULL, note text NOT NULL)",
  );
}

function subjectOf(db: Database): IdempotencySubject {
  return { db, merchant: (label) => uniqueName(`m_${label}`) };
}

/** Opens a PostgreSQL database in a fresh schema with the idempotency table; `drop()` removes the schema. */
export function openPostgresSchema(url: string, maxConnections = MAX_TEST_POOL): Promise<lab.TestSchema> {
  return lab.openPostgresTestSchema(url, {
    system: SYSTEM,
    prefix: "idem",
    prepare: migrateIdempotency,
    maxConnections,
  });
}

export const idempotencyBackends = lab.sqlBackends({
  system: SYSTEM,
  prefix: "idem",
  prepare: migrateIdempotency,
  subject: subjectOf,
});
