/**
 * The chat store's schema: the migrations in `./migrations/`, applied by infra's runner
 * (one transaction each, advisory-locked, checksummed).
 *
 * @example
 * await migrateChatStore(db);
 */
import { type MigrationReport, runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";

export const CHAT_MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

export function migrateChatStore(db: Database): Promise<MigrationReport> {
  return runMigrations(db, { dir: CHAT_MIGRATIONS_DIR });
}
