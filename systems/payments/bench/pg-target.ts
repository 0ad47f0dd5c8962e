/**
 * The PostgreSQL the bench runs against: $DATABASE_URL when set, else a throw-away
 * cluster spawned for the run (lab's spawnPostgres), so ours and pgbench meet the same
 * fresh server with the same settings. The spawned cluster keeps PostgreSQL's defaults
 * (fsync on: lab turns it off for tests, the bench turns it back on) because the issue's
 * reference number (~1.6k TPS) was measured with default settings, and a commit's fsync
 * is exactly the cost a batch amortizes.
 *
 * @example
 * const target = await openPgTarget({ env: process.env, log });
 * try { target.url; target.settings.fsync; } finally { await target.close(); }
 */

import { type SpawnedPostgres, spawnPostgres } from "@casebook/lab/spawn-postgres";
import pg from "pg";

export interface PgTarget {
  readonly url: string;
  /** What ran, for the report: "private PostgreSQL 15.x (spawned) at 127.0.0.1:41234". */
  readonly label: string;
  /** True when the bench spawned this server: nobody else's load is on it. */
  readonly isPrivate: boolean;
  /** The server settings that decide commit cost, as SHOW prints them. */
  readonly settings: Readonly<Record<string, string>>;
  /** Stops a spawned server (its data goes with it). Idempotent. */
  close(): Promise<void>;
}

/** Settings printed with the results: what a reader needs to reproduce or compare the numbers. */
export const reportedSettings = [
  "server_version",
  "fsync",
  "synchronous_commit",
  "wal_sync_method",
  "commit_delay",
  "full_page_writes",
  "wal_level",
  "shared_buffers",
  "max_wal_size",
  "max_connections",
] as const;

/** Bound on connecting and on each SHOW. */
const adminTimeoutMs = 10_000;

async function readSettings(url: string): Promise<Record<string, string>> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: adminTimeoutMs,
    query_timeout: adminTimeoutMs,
  });
  await client.connect();
  try {
    const settings: Record<string, string> = {};
    for (const name of reportedSettings) {
      const { rows } = await client.query<Record<string, string>>(`SHOW ${name}`);
      settings[name] = rows[0]?.[name] ?? "?";
    }
    return settings;
  } finally {
    await client.end();
  }
}

/** host:port/database of a URL, never its password. */
export function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
}

/**
 * Connects to $DATABASE_URL, or spawns a private PostgreSQL with default settings.
 *
 * @example
 * const target = await openPgTarget({ env: {}, log: console.error }); // always spawns
 */
export async function openPgTarget(options: {
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<PgTarget> {
  const given = options.env.DATABASE_URL;
  let spawned: SpawnedPostgres | undefined;
  if (given === undefined || given === "") {
    options.log("DATABASE_URL is not set: spawning a throw-away PostgreSQL (default settings) for this run");
    spawned = await spawnPostgres({ settings: { fsync: "on" } });
  }
  const url = spawned?.url ?? given!;
  let settings: Record<string, string>;
  try {
    settings = await readSettings(url);
  } catch (error) {
    await spawned?.stop();
    throw error;
  }
  const where = spawned ? "private PostgreSQL (spawned for this run)" : "DATABASE_URL";
  return {
    url,
    label: `${where}, PostgreSQL ${settings.server_version} at ${describeUrl(url)}`,
    isPrivate: spawned !== undefined,
    settings,
    close: async () => {
      await spawned?.stop();
    },
  };
}
