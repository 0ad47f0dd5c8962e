/**
 * The two SQL engines every payments contract suite runs on (lab's `sql-backends.ts`: PGlite in
 * memory and the real PostgreSQL in a schema of its own), bound to this system; each suite
 * passes which migrations and which subject.
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Backend } from "@casebook/lab/contract-suite";
import * as lab from "@casebook/lab/sql-backends";

export { MAX_TEST_POOL, type TestSchema } from "@casebook/lab/sql-backends";

export const SYSTEM = "payments";
export const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);

/** A fresh PostgreSQL schema named `<prefix>_…`, prepared by `prepare` (migrations). */
export function openPostgresTestSchema(
  url: string,
  options: { prefix: string; prepare: (db: Database) => Promise<void>; maxConnections?: number },
): Promise<lab.TestSchema> {
  return lab.openPostgresTestSchema(url, { ...options, system: SYSTEM });
}

/** PGlite in memory, prepared by `prepare`. */
export function openPgliteTestDatabase(prepare: (db: Database) => Promise<void>): Promise<Database> {
  return lab.openPgliteTestDatabase({ system: SYSTEM, prepare });
}

/** Both engines as contract-suite backends of `subject(db)`. */
export function sqlBackends<Subject>(options: {
  prefix: string;
  prepare: (db: Database) => Promise<void>;
  subject: (db: Database) => Subject;
}): Backend<Subject>[] {
  return lab.sqlBackends({ ...options, system: SYSTEM });
}
