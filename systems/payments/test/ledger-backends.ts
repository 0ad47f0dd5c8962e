/**
 * The backends the ledger suites run on: PGlite in memory and the real PostgreSQL in a
 * schema of its own, dropped at close. Only the ledger's migrations are applied, so the
 * suite does not depend on other parts of the system.
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { uniqueName } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import {
  MAX_TEST_POOL,
  MIGRATIONS_DIR,
  openPostgresTestSchema,
  SYSTEM,
  sqlBackends,
  type TestSchema,
} from "./sql-backends.ts";

export { MAX_TEST_POOL };

const LEDGER_MIGRATION = /^\d{3}_ledger/;

export interface LedgerSubject {
  db: Database;
  ledger: LedgerRepository;
  /** A key no other case uses, so cases share one ledger without meeting. */
  key(label: string): string;
}

export async function migrateLedger(db: Database): Promise<void> {
  const ledger = (await readMigrations(MIGRATIONS_DIR)).filter((m) => LEDGER_MIGRATION.test(m.name));
  if (ledger.length === 0) throw new Error("001_ledger.sql is missing");
  await applyMigrations(db, ledger);
}

export function subjectOf(db: Database): LedgerSubject {
  return { db, ledger: new LedgerRepository(db), key: (label) => uniqueName(label) };
}

/** A fresh PostgreSQL schema holding the ledger; `drop()` removes it and closes the pool. */
export function openPostgresLedger(url: string, maxConnections = MAX_TEST_POOL): Promise<TestSchema> {
  return openPostgresTestSchema(url, { prefix: "ledger", prepare: migrateLedger, maxConnections });
}

/** Another pool on an existing schema: a second "process" racing the first. */
export function openPool(url: string, schema: string, maxConnections: number): Promise<Database> {
  return openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections } });
}

export const ledgerBackends = sqlBackends({ prefix: "ledger", prepare: migrateLedger, subject: subjectOf });
