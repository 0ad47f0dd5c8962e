/**
 * The url-shortener store's schema: the migrations in `./migrations/`, applied by infra's
 * runner (one transaction each, advisory-locked, checksummed).
 *
 * @example
 * await migrateShortenerStore(db);
 */
import { type MigrationReport, runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";

export const SHORTENER_MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

export function migrateShortenerStore(db: Database): Promise<MigrationReport> {
  return runMigrations(db, { dir: SHORTENER_MIGRATIONS_DIR });
}
