/**
 * The backends the idempotency contract suite runs on: PGlite in memory and the real
 * PostgreSQL in a schema of its own, dropped at close. Only `002_idempotency` is
 * applied: the idempotency table depends on no other migration, and this keeps the
 * suite independent of the ledger's migrations.
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { uniqueName } from "@casebook/lab/test-engines";
import {
  MIGRATIONS_DIR,
  openPostgresTestSchema,
  SYSTEM,
  sqlBackends,
  TEST_POOL_MAX,
  type TestSchema,
} from "./sql-backends.ts";

export { MIGRATIONS_DIR, SYSTEM, TEST_POOL_MAX };

export interface IdempotencySubject {
  db: Database;
  /** A merchant id no other case uses, so cases share one table without meeting. */
  merchant(label: string): string;
}

/** Applies the idempotency migration (only it) to `db`'s schema. */
export async function migrateIdempotency(db: Database): Promise<void> {
  const idempotency = (await readMigrations(MIGRATIONS_DIR)).filter((m) => m.name === "002_idempotency");
  if (idempotency.length !== 1) throw new Error("002_idempotency.sql is missing");
  await applyMigrations(db, idempotency);
  // A stand-in for the caller's own writes (ledger entries, saga rows) in the same transaction.
  await db.exec(
    "CREATE TABLE IF NOT EXISTS caller_effects (merchant_id text NOT NULL, key text NOT NULL, note text NOT NULL)",
  );
}

function subjectOf(db: Database): IdempotencySubject {
  return { db, merchant: (label) => uniqueName(`m_${label}`) };
}

/** Opens a PostgreSQL database in a fresh schema with the idempotency table; `drop()` removes the schema. */
export function openPostgresSchema(url: string, maxConnections = TEST_POOL_MAX): Promise<TestSchema> {
  return openPostgresTestSchema(url, { prefix: "idem", prepare: migrateIdempotency, maxConnections });
}

export const idempotencyBackends = sqlBackends({
  prefix: "idem",
  prepare: migrateIdempotency,
  subject: subjectOf,
});
