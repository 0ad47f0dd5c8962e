/**
 * The PostgreSQL the webhooks bench runs against: $DATABASE_URL when set, else the local
 * test database (127.0.0.1:5432/test). Every scenario run gets a fresh, migrated schema
 * of its own, dropped when the run ends, so runs do not inherit each other's tables.
 *
 * @example
 * const target = await openPgTarget({ env: process.env });
 * const run = await target.freshSchema("drain");
 * try { … run.db, run.schema … } finally { await run.drop(); }
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { testDatabaseUrl, uniqueName } from "@casebook/lab/test-engines";
import { migrateWebhookStore } from "../src/store/migrate.ts";

export interface BenchSchema {
  db: Database;
  schema: string;
  drop(): Promise<void>;
}

export interface PgTarget {
  readonly url: string;
  /** What ran, for the report, never the password. */
  readonly label: string;
  /** The server settings that decide commit cost. */
  readonly settings: Readonly<Record<string, string>>;
  freshSchema(name: string): Promise<BenchSchema>;
  /** Drops schemas still open (an interrupted run). Idempotent. */
  close(): Promise<void>;
}

/** Connections of the bench process's own pool (relay, ingest, checks). */
const MAX_BENCH_POOL = 8;
const REPORTED = ["server_version", "fsync", "synchronous_commit", "max_connections"] as const;

function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
}

async function readSettings(db: Database): Promise<Record<string, string>> {
  const settings: Record<string, string> = {};
  for (const name of REPORTED) {
    const { rows } = await db.query<Record<string, string>>(`SHOW ${name}`);
    settings[name] = rows[0]?.[name] ?? "?";
  }
  return settings;
}

/** Connects and reads the settings; fails the bench early when PostgreSQL is unreachable. */
export async function openPgTarget(options: { env: NodeJS.ProcessEnv }): Promise<PgTarget> {
  const url = options.env.DATABASE_URL || testDatabaseUrl;
  const open = new Set<BenchSchema>();
  const freshSchema = async (name: string): Promise<BenchSchema> => {
    const schema = uniqueName(`wh_bench_${name}`);
    const db = await openDatabase({
      system: "webhooks",
      url,
      schema,
      pool: { maxConnections: MAX_BENCH_POOL },
    });
    await migrateWebhookStore(db);
    const run: BenchSchema = {
      db,
      schema,
      drop: async () => {
        if (!open.delete(run)) return;
        try {
          await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
        } finally {
          await db.close();
        }
      },
    };
    open.add(run);
    return run;
  };
  const probe = await freshSchema("probe");
  let settings: Record<string, string>;
  try {
    settings = await readSettings(probe.db);
  } finally {
    await probe.drop();
  }
  const where = options.env.DATABASE_URL ? "DATABASE_URL" : "the local test database";
  return {
    url,
    label: `${where}, PostgreSQL ${settings.server_version} at ${describeUrl(url)}`,
    settings,
    freshSchema,
    close: async () => {
      for (const run of [...open]) await run.drop();
    },
  };
}
