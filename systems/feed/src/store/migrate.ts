/**
 * feed's schema: the migrations in `./migrations/`, applied by infra's runner (one
 * transaction each, advisory-locked, checksummed).
 *
 * @example
 * await migrateFeed(db);
 */
import { type MigrationReport, runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";

export const FEED_MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

export function migrateFeed(db: Database): Promise<MigrationReport> {
  return runMigrations(db, { dir: FEED_MIGRATIONS_DIR });
}
