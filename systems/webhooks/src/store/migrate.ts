/**
 * The webhook store's schema: the migrations in `./migrations/` (001 tenants, 002
 * subscriptions, 003 events + outbox, 004 deliveries + attempts, 007 the outbox's lease
 * vocabulary, 008 the subscription's status, 009 API keys' last use and revocation), applied by
 * infra's runner (one transaction each, advisory-locked, checksummed).
 *
 * @example
 * const db = await openDatabase({ system: "webhooks" });
 * await migrateWebhookStore(db);
 */
import { type MigrationReport, runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";

export const WEBHOOK_MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

/** Applies the pending webhook migrations to `db`'s schema. */
export function migrateWebhookStore(db: Database): Promise<MigrationReport> {
  return runMigrations(db, { dir: WEBHOOK_MIGRATIONS_DIR });
}
