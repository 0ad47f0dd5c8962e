/**
 * The two SQL engines every payments contract suite runs on — PGlite in memory and the
 * real PostgreSQL in a schema of its own, dropped at close — with the part each suite
 * varies (which migrations, which subject) passed in.
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";

export const SYSTEM = "payments";
export const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** Small on purpose: other suites share the server. Races open their own pools. */
export const TEST_POOL_MAX = 4;

export interface TestSchema {
  db: Database;
  schema: string;
  /** Drops the schema and closes the pool. */
  drop(): Promise<void>;
}

/** A fresh PostgreSQL schema named `<prefix>_…`, prepared by `prepare` (migrations). */
export async function openPostgresTestSchema(
  url: string,
  options: { prefix: string; prepare: (db: Database) => Promise<void>; maxConnections?: number },
): Promise<TestSchema> {
  const schema = uniqueName(options.prefix);
  const db = await openDatabase({
    system: SYSTEM,
    url,
    schema,
    pool: { maxConnections: options.maxConnections ?? TEST_POOL_MAX },
  });
  await options.prepare(db);
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

/** PGlite in memory, prepared by `prepare`. */
export async function openPgliteTestDatabase(prepare: (db: Database) => Promise<void>): Promise<Database> {
  const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
  await prepare(db);
  return db;
}

/** Both engines as contract-suite backends of `subject(db)`. */
export function sqlBackends<Subject>(options: {
  prefix: string;
  prepare: (db: Database) => Promise<void>;
  subject: (db: Database) => Subject;
}): Backend<Subject>[] {
  return [
    {
      name: "pglite memory",
      async open() {
        const db = await openPgliteTestDatabase(options.prepare);
        return { subject: options.subject(db), close: () => db.close() };
      },
    },
    {
      name: "postgresql",
      async open(t) {
        const url = await requirePostgres(t);
        if (!url) return undefined;
        const opened = await openPostgresTestSchema(url, options);
        return { subject: options.subject(opened.db), close: opened.drop };
      },
    },
  ];
}
