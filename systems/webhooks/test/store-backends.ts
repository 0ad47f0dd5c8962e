/**
 * The two SQL engines every webhook store contract suite runs on — PGlite in memory and
 * the real PostgreSQL in a schema of its own, dropped at close — migrated to the current
 * schema. Suites share one database per backend, so each test makes its own tenant (and
 * claims with `claimDueForTenant`) to stay out of the others' way.
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { migrateWebhookStore } from "../src/store/migrate.ts";

export const SYSTEM = "webhooks";
/** Small on purpose: other suites share the server. Races open their own pools. */
export const TEST_POOL_MAX = 4;

export interface TestSchema {
  db: Database;
  schema: string;
  /** Drops the schema and closes the pool. */
  drop(): Promise<void>;
}

/** A fresh, migrated PostgreSQL schema named `<prefix>_…`. */
export async function openPostgresTestSchema(
  url: string,
  options: { prefix: string; maxConnections?: number },
): Promise<TestSchema> {
  const schema = uniqueName(options.prefix);
  const db = await openDatabase({
    system: SYSTEM,
    url,
    schema,
    pool: { maxConnections: options.maxConnections ?? TEST_POOL_MAX },
  });
  await migrateWebhookStore(db);
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

/** PGlite in memory, migrated. */
export async function openPgliteTestDatabase(): Promise<Database> {
  const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
  await migrateWebhookStore(db);
  return db;
}

/** Both engines as contract-suite backends; the subject is the migrated database. */
export function storeBackends(prefix: string): Backend<Database>[] {
  return [
    {
      name: "pglite memory",
      async open() {
        const db = await openPgliteTestDatabase();
        return { subject: db, close: () => db.close() };
      },
    },
    {
      name: "postgresql",
      async open(t) {
        const url = await requirePostgres(t);
        if (!url) return undefined;
        const opened = await openPostgresTestSchema(url, { prefix });
        return { subject: opened.db, close: opened.drop };
      },
    },
  ];
}
