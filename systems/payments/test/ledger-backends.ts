/**
 * The backends the ledger suites run on: PGlite in memory and the real PostgreSQL in a
 * schema of its own, dropped at close. Only the ledger's migrations are applied, so the
 * suite does not depend on other parts of the system.
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";

const SYSTEM = "payments";
const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
const LEDGER_MIGRATION = /^(001|003)_ledger/;
/** Small on purpose: other helpers' suites share the server. Races open their own pools. */
export const TEST_POOL_MAX = 4;

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
export async function openPostgresLedger(
  url: string,
  maxConnections = TEST_POOL_MAX,
): Promise<{ db: Database; schema: string; drop(): Promise<void> }> {
  const schema = uniqueName("ledger");
  const db = await openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections } });
  await migrateLedger(db);
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

/** Another pool on an existing schema: a second "process" racing the first. */
export function openPool(url: string, schema: string, maxConnections: number): Promise<Database> {
  return openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections } });
}

export const pgliteMemory: Backend<LedgerSubject> = {
  name: "pglite memory",
  async open() {
    const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
    await migrateLedger(db);
    return { subject: subjectOf(db), close: () => db.close() };
  },
};

export const postgres: Backend<LedgerSubject> = {
  name: "postgresql",
  async open(t) {
    const url = await requirePostgres(t);
    if (!url) return undefined;
    const opened = await openPostgresLedger(url);
    return { subject: subjectOf(opened.db), close: opened.drop };
  },
};

export const ledgerBackends = [pgliteMemory, postgres];
