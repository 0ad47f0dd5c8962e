/**
 * The four backends the SQL contract suite runs against: PGlite in memory, PGlite
 * on disk (through `openDatabase` and CASEBOOK_DATA), PGlite on a worker thread of its own
 * (pglite-thread-database.ts, in memory), and the real PostgreSQL in a schema of its own,
 * dropped at close with every scratch schema it handed out.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Backend } from "@casebook/lab/contract-suite";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { openDatabase } from "../../src/sql/open-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { quoteIdentifier } from "../../src/sql/sql-schema.ts";

export interface SqlSubject {
  db: Database;
  /** A schema name no other case or process uses; dropped when the backend closes. */
  scratchSchema(label: string): string;
}

const SYSTEM = "sql-contract";
/** Small on purpose: other helpers' suites share the server. 4 still lets 4 transactions overlap. */
const MAX_TEST_POOL = 4;

function subjectOf(db: Database, scratch: string[]): SqlSubject {
  return {
    db,
    scratchSchema(label) {
      const name = uniqueName(label);
      scratch.push(name);
      return name;
    },
  };
}

export const pgliteMemory: Backend<SqlSubject> = {
  name: "pglite memory",
  embedded: true,
  async open() {
    const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
    return { subject: subjectOf(db, []), close: () => db.close() };
  },
};

export const pgliteDisk: Backend<SqlSubject> = {
  name: "pglite disk",
  embedded: true,
  async open() {
    const root = await mkdtemp(join(tmpdir(), "casebook-sql-"));
    const db = await openDatabase({ system: SYSTEM, env: { CASEBOOK_DATA: root } });
    return {
      subject: subjectOf(db, []),
      close: async () => {
        await db.close();
        await rm(root, { recursive: true, force: true });
      },
    };
  },
};

export const pgliteThread: Backend<SqlSubject> = {
  name: "pglite thread",
  embedded: true,
  async open() {
    const pgliteThread = { maxPending: 1_000 };
    const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {}, pgliteThread });
    return { subject: subjectOf(db, []), close: () => db.close() };
  },
};

export const postgres: Backend<SqlSubject> = {
  name: "postgresql",
  async open(t) {
    const url = await requirePostgres(t);
    if (!url) return undefined;
    const schema = uniqueName("sqlc");
    const scratch: string[] = [schema];
    const db = await openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections: MAX_TEST_POOL } });
    return {
      subject: subjectOf(db, scratch),
      close: async () => {
        try {
          for (const name of scratch) await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(name)} CASCADE`);
        } finally {
          await db.close();
        }
      },
    };
  },
};

export const sqlBackends = [pgliteMemory, pgliteDisk, pgliteThread, postgres];
