/**
 * The backends the idempotency contract suite runs on: PGlite in memory and the real
 * PostgreSQL in a schema of its own, dropped at close. Only `002_idempotency` is
 * applied: the idempotency table depends on no other migration, and this keeps the
 * suite independent of the ledger's migrations.
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";

export const SYSTEM = "payments";
export const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** Small on purpose: other helpers' suites share the server. */
export const TEST_POOL_MAX = 4;

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
export async function openPostgresSchema(
  url: string,
  maxConnections = TEST_POOL_MAX,
): Promise<{ db: Database; schema: string; drop(): Promise<void> }> {
  const schema = uniqueName("idem");
  const db = await openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections } });
  await migrateIdempotency(db);
  return {
    db,
    schema,
    drop: async () => {
      try {
        await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
      } finally {
        await db.close();
      }
    },
  };
}

export const pgliteMemory: Backend<IdempotencySubject> = {
  name: "pglite memory",
  async open() {
    const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
    await migrateIdempotency(db);
    return { subject: subjectOf(db), close: () => db.close() };
  },
};

export const postgres: Backend<IdempotencySubject> = {
  name: "postgresql",
  async open(t) {
    const url = await requirePostgres(t);
    if (!url) return undefined;
    const opened = await openPostgresSchema(url);
    return { subject: subjectOf(opened.db), close: opened.drop };
  },
};

export const idempotencyBackends = [pgliteMemory, postgres];
