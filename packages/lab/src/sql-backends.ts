/**
 * The two SQL engines a system's contract suites run on — PGlite in memory, and the real
 * PostgreSQL in a fresh schema of its own, dropped at close — with what each suite varies
 * passed in: the system (it names the database's defaults), how to prepare a fresh database
 * (its migrations), and the subject built on it.
 *
 * @example
 * const backends = sqlBackends({
 *   system: "payments", prefix: "ledger",
 *   prepare: (db) => runMigrations(db, { dir }),
 *   subject: (db) => new LedgerRepository(db),
 * });
 * runContractSuite("ledger", backends, (test) => { ... });
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import type { Backend } from "./contract-suite.ts";
import { requirePostgres, uniqueName } from "./test-engines.ts";

/** Small on purpose: other suites share the server. Races open their own pools. */
export const MAX_TEST_POOL = 4;

export interface TestSchema {
  db: Database;
  schema: string;
  /** Drops the schema and closes the pool. */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** The system's name (`payments`): its database defaults. */
  system: string;
  /** Migrations (or any set-up) for a fresh database. */
  prepare: (db: Database) => Promise<unknown>;
}

/** A fresh PostgreSQL schema named `<prefix>_…`, prepared by `prepare`. */
export async function openPostgresTestSchema(
  url: string,
  options: TestDatabaseOptions & { prefix: string; maxConnections?: number },
): Promise<TestSchema> {
  const schema = uniqueName(options.prefix);
  const db = await openDatabase({
    system: options.system,
    url,
    schema,
    pool: { maxConnections: options.maxConnections ?? MAX_TEST_POOL },
  });
  const drop = async () => {
    try {
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await db.close();
    }
  };
  try {
    await options.prepare(db);
  } catch (error) {
    await drop();
    throw error;
  }
  return { db, schema, drop };
}

/** PGlite in memory, prepared by `prepare`. */
export async function openPgliteTestDatabase(options: TestDatabaseOptions): Promise<Database> {
  const db = await openDatabase({ system: options.system, dataDir: "memory://", env: {} });
  try {
    await options.prepare(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}

/** Both engines as contract-suite backends of `subject(db)`; PostgreSQL skips (or fails in CI) when absent. */
export function sqlBackends<Subject>(
  options: TestDatabaseOptions & { prefix: string; subject: (db: Database) => Subject },
): Backend<Subject>[] {
  return [
    {
      name: "pglite memory",
      embedded: true,
      async open() {
        const db = await openPgliteTestDatabase(options);
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
