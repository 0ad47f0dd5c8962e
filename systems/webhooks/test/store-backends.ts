/**
 * The two SQL engines every webhook store contract suite runs on (lab's `sql-backends.ts`:
 * PGlite in memory and the real PostgreSQL in a schema of its own), migrated to the current
 * schema. Suites share one database per backend, so each test makes its own tenant (and
 * claims with `claimDueForTenant`) to stay out of the others' way.
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Backend } from "@casebook/lab/contract-suite";
import * as lab from "@casebook/lab/sql-backends";
import { migrateWebhookStore } from "../src/store/migrate.ts";

export { MAX_TEST_POOL, type TestSchema } from "@casebook/lab/sql-backends";

export const SYSTEM = "webhooks";

/** A fresh, migrated PostgreSQL schema named `<prefix>_…`. */
export function openPostgresTestSchema(
  url: string,
  options: { prefix: string; maxConnections?: number },
): Promise<lab.TestSchema> {
  return lab.openPostgresTestSchema(url, { ...options, system: SYSTEM, prepare: migrateWebhookStore });
}

/** PGlite in memory, migrated. */
export function openPgliteTestDatabase(): Promise<Database> {
  return lab.openPgliteTestDatabase({ system: SYSTEM, prepare: migrateWebhookStore });
}

/** Both engines as contract-suite backends; the subject is the migrated database. */
export function storeBackends(prefix: string): Backend<Database>[] {
  return lab.sqlBackends({ system: SYSTEM, prefix, prepare: migrateWebhookStore, subject: (db) => db });
}
