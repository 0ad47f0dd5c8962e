/**
 * The backends the merchant and account suites run on: PGlite in memory and the real
 * PostgreSQL in a schema of its own, dropped at close. Every migration of the system is
 * applied (the merchant_accounts table comes from 003_payments.sql, merchants from 005).
 * Time is a ManualClock; API keys use node:crypto's randomBytes (their value never matters
 * to an assertion, their unguessability does).
 */
import { randomBytes } from "node:crypto";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { ManualClock } from "@casebook/kit/clock";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";

const SYSTEM = "payments";
export const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** Small on purpose: other helpers' suites share the server. Races open their own pools. */
export const TEST_POOL_MAX = 4;
/** 2026-10-22T00:00:00Z: a fixed start, so expiry checks are exact. */
export const START_MS = Date.UTC(2026, 9, 22);

export interface MerchantSubject {
  db: Database;
  clock: ManualClock;
  merchants: MerchantRepository;
  ledger: LedgerRepository;
  /** A merchant id no other case uses. */
  id(label: string): string;
}

export function subjectOf(db: Database): MerchantSubject {
  const clock = new ManualClock(START_MS);
  return {
    db,
    clock,
    merchants: new MerchantRepository(db, { clock, randomBytes }),
    ledger: new LedgerRepository(db),
    id: (label) =>
      uniqueName(label)
        .replaceAll(/[^A-Za-z0-9_-]/g, "_")
        .slice(0, 64),
  };
}

/** A fresh PostgreSQL schema with every migration; `drop()` removes it and closes the pool. */
export async function openPostgresPayments(url: string, maxConnections = TEST_POOL_MAX) {
  const schema = uniqueName("payments_merchants");
  const db = await openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections } });
  await runMigrations(db, { dir: MIGRATIONS_DIR });
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

export async function openPgliteMemory(): Promise<Database> {
  const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
  await runMigrations(db, { dir: MIGRATIONS_DIR });
  return db;
}

export const pgliteMemory: Backend<MerchantSubject> = {
  name: "pglite memory",
  async open() {
    const db = await openPgliteMemory();
    return { subject: subjectOf(db), close: () => db.close() };
  },
};

export const postgres: Backend<MerchantSubject> = {
  name: "postgresql",
  async open(t) {
    const url = await requirePostgres(t);
    if (!url) return undefined;
    const opened = await openPostgresPayments(url);
    return { subject: subjectOf(opened.db), close: opened.drop };
  },
};

export const merchantBackends = [pgliteMemory, postgres];
