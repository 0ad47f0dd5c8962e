/**
 * The backends the merchant and account suites run on: PGlite in memory and the real
 * PostgreSQL in a schema of its own, dropped at close. Every migration of the system is
 * applied (the merchant_accounts table comes from 003_payments.sql, merchants from 005).
 * Time is a ManualClock; API keys use node:crypto's randomBytes (their value never matters
 * to an assertion, their unguessability does).
 */
import { randomBytes } from "node:crypto";
import { runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { uniqueName } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import {
  MAX_TEST_POOL,
  MIGRATIONS_DIR,
  openPgliteTestDatabase,
  openPostgresTestSchema,
  sqlBackends,
  type TestSchema,
} from "./sql-backends.ts";

export { MAX_TEST_POOL, MIGRATIONS_DIR };

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
const migrateAll = async (db: Database) => {
  await runMigrations(db, { dir: MIGRATIONS_DIR });
};

export function openPostgresPayments(url: string, maxConnections = MAX_TEST_POOL): Promise<TestSchema> {
  return openPostgresTestSchema(url, { prefix: "payments_merchants", prepare: migrateAll, maxConnections });
}

export function openPgliteMemory(): Promise<Database> {
  return openPgliteTestDatabase(migrateAll);
}

export const merchantBackends = sqlBackends({
  prefix: "payments_merchants",
  prepare: migrateAll,
  subject: subjectOf,
});
