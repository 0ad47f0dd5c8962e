/**
 * flash-sale's schema: the migrations in `./migrations/`, applied by infra's runner (one
 * transaction each, advisory-locked, checksummed).
 *
 * @example
 * await migrateFlashSale(db);
 */
import { type MigrationReport, runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";

export const FLASH_SALE_MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

export function migrateFlashSale(db: Database): Promise<MigrationReport> {
  return runMigrations(db, { dir: FLASH_SALE_MIGRATIONS_DIR });
}
