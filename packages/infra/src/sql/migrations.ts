/**
 * Per-system schema migrations: ordered files `NNN_name.sql` in one folder, each
 * applied in its own transaction and recorded in `casebook_migrations` (name,
 * checksum, applied_at) in the system's schema.
 *
 * Safe with several processes starting at once (replicas, a deploy): every
 * migration transaction first takes `pg_advisory_xact_lock` on a key derived from
 * the schema, then re-reads what is applied. A runner that waited for the lock finds
 * the work done and skips it, so each migration runs exactly once. The lock is
 * transaction-scoped, so it cannot outlive a crashed runner, and it needs no
 * dedicated connection from the pool.
 *
 * Refused, before anything runs: an applied file that was edited (checksum), an
 * applied migration this code does not have, and a pending migration numbered below
 * one already applied. A statement that cannot run in a transaction
 * (`CREATE INDEX CONCURRENTLY`) cannot be a migration here.
 *
 * @example
 * const db = await openDatabase({ system: "payments" });
 * const { applied } = await runMigrations(db, { dir: new URL("../store/migrations/", import.meta.url) });
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Database, Queryable } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";
import { ensureSchema, quoteIdentifier } from "./sql-schema.ts";

export interface Migration {
  /** File name without `.sql`: `001_create_accounts`. */
  name: string;
  /** Its number, the order it runs in. */
  version: number;
  sql: string;
  /** sha256 of the text with line endings normalized, so a CRLF checkout is not an "edit". */
  checksum: string;
}

export interface MigrationOptions {
  /** Schema the migrations and their record live in; default `db.schema` (else the server's search_path). */
  schema?: string;
  /** Bound on waiting for the migration lock and for each DDL statement's table locks. Default 60 000. */
  lockTimeoutMs?: number;
  /** Bound on each migration statement (they may rewrite big tables). Default 600 000. Not enforced on PGlite. */
  statementTimeoutMs?: number;
}

export interface MigrationReport {
  /** Applied by this call, in order. */
  applied: string[];
  /** Already applied before this call, or by a concurrent runner while it waited. */
  skipped: string[];
}

const FILE_PATTERN = /^(\d{3,})_([a-z0-9][a-z0-9_-]*)\.sql$/;
const DEFAULT_LOCK_TIMEOUT_MS = 60_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 600_000;

/** Builds a migration from its file name (`001_init.sql` or `001_init`) and text. */
export function migration(fileName: string, sql: string): Migration {
  const match = FILE_PATTERN.exec(fileName.endsWith(".sql") ? fileName : `${fileName}.sql`);
  if (!match) throw sqlErrors.create("SQL_MIGRATION_INVALID", { fields: { file: fileName } });
  const checksum = createHash("sha256").update(sql.replaceAll("\r\n", "\n")).digest("hex");
  return { name: `${match[1]}_${match[2]}`, version: Number(match[1]), sql, checksum };
}

/** Reads every `*.sql` of `dir` (other files are ignored), ordered by number; refuses bad names and duplicate numbers. */
export async function readMigrations(dir: string | URL): Promise<Migration[]> {
  const path = dir instanceof URL ? fileURLToPath(dir) : dir;
  const files = (await readdir(path)).filter((file) => file.endsWith(".sql"));
  const migrations = await Promise.all(
    files.map(async (file) => migration(file, await readFile(join(path, file), "utf8"))),
  );
  return ordered(migrations);
}

function ordered(migrations: readonly Migration[]): Migration[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.version === sorted[i - 1]!.version) {
      const files = [sorted[i - 1]!.name, sorted[i]!.name];
      throw sqlErrors.create("SQL_MIGRATION_INVALID", {
        fields: { files },
        detail: `Two migrations share a number.`,
      });
    }
  }
  return sorted;
}

/** A 64-bit advisory lock key per schema, so systems sharing a server don't wait on each other. */
export function migrationLockKey(schema: string | undefined): bigint {
  const digest = createHash("sha256")
    .update(`casebook_migrations:${schema ?? ""}`)
    .digest();
  return digest.readBigInt64BE(0);
}

interface AppliedRow {
  name: string;
  checksum: string;
}

/** The migrations still to run; throws when the recorded history contradicts `migrations`. */
export function pendingMigrations(
  migrations: readonly Migration[],
  applied: readonly AppliedRow[],
): Migration[] {
  const known = new Map(migrations.map((m) => [m.name, m]));
  let lastApplied = -1;
  for (const row of applied) {
    const mine = known.get(row.name);
    if (!mine) throw sqlErrors.create("SQL_MIGRATION_UNKNOWN", { fields: { name: row.name } });
    if (mine.checksum !== row.checksum) {
      const fields = { name: row.name, recorded: row.checksum, file: mine.checksum };
      throw sqlErrors.create("SQL_MIGRATION_CHECKSUM_MISMATCH", { fields });
    }
    lastApplied = Math.max(lastApplied, mine.version);
  }
  const done = new Set(applied.map((row) => row.name));
  const pending = migrations.filter((m) => !done.has(m.name));
  const early = pending.find((m) => m.version < lastApplied);
  if (early)
    throw sqlErrors.create("SQL_MIGRATION_OUT_OF_ORDER", { fields: { name: early.name, lastApplied } });
  return pending;
}

interface Settings {
  schema: string | undefined;
  lockTimeoutMs: number;
  statementTimeoutMs: number;
}

/** Opens a migration transaction: bounds, the lock, the record table; returns what is applied. */
async function lockAndLoad(tx: Queryable, settings: Settings): Promise<AppliedRow[]> {
  const { schema } = settings;
  await tx.query("SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)", [
    `${settings.lockTimeoutMs}ms`,
    `${settings.statementTimeoutMs}ms`,
  ]);
  await tx.query("SELECT pg_advisory_xact_lock($1::int8)", [migrationLockKey(schema)]);
  if (schema !== undefined)
    await tx.query("SELECT set_config('search_path', $1, true)", [quoteIdentifier(schema)]);
  await tx.exec(`CREATE TABLE IF NOT EXISTS ${recordTable(schema)} (
    name text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const { rows } = await tx.query<AppliedRow>(
    `SELECT name, checksum FROM ${recordTable(schema)} ORDER BY name`,
  );
  return rows;
}

function recordTable(schema: string | undefined): string {
  return schema === undefined ? "casebook_migrations" : `${quoteIdentifier(schema)}.casebook_migrations`;
}

/** Applies the pending `migrations` in order, one transaction each, under the schema's advisory lock. */
export async function applyMigrations(
  db: Database,
  migrations: readonly Migration[],
  options: MigrationOptions = {},
): Promise<MigrationReport> {
  const all = ordered(migrations);
  const settings: Settings = {
    schema: options.schema ?? db.schema,
    lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    statementTimeoutMs: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
  };
  // Outside any transaction: a lost CREATE SCHEMA race must not abort a transaction (ensureSchema absorbs it).
  if (settings.schema !== undefined) await ensureSchema(db, settings.schema);
  // READ COMMITTED on purpose: each statement after the lock sees what the previous holder committed.
  const readCommitted = { isolation: "read committed" } as const;
  const plan = await db.transaction(
    async (tx) => pendingMigrations(all, await lockAndLoad(tx, settings)),
    readCommitted,
  );
  const applied: string[] = [];
  for (const next of plan) {
    const ran = await db.transaction(async (tx) => {
      const pending = pendingMigrations(all, await lockAndLoad(tx, settings));
      if (!pending.some((m) => m.name === next.name)) return false; // a concurrent runner did it
      await tx.exec(next.sql);
      await tx.query(`INSERT INTO ${recordTable(settings.schema)} (name, checksum) VALUES ($1, $2)`, [
        next.name,
        next.checksum,
      ]);
      return true;
    }, readCommitted);
    if (ran) applied.push(next.name);
  }
  const appliedNow = new Set(applied);
  return { applied, skipped: all.filter((m) => !appliedNow.has(m.name)).map((m) => m.name) };
}

/** `readMigrations(dir)` then `applyMigrations`. */
export async function runMigrations(
  db: Database,
  options: MigrationOptions & { dir: string | URL },
): Promise<MigrationReport> {
  return applyMigrations(db, await readMigrations(options.dir), options);
}
