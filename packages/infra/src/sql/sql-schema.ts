/**
 * One schema per system (and per test). Schema names reach SQL text
 * (`SET search_path`, `CREATE SCHEMA`), where parameters cannot go, so they are
 * checked against a strict pattern before being quoted.
 *
 * @example
 * await ensureSchema(db, schemaName("flash-sale")); // CREATE SCHEMA IF NOT EXISTS "flash_sale"
 */
import type { Queryable } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";
import { isUniqueViolation, sqlState } from "./sql-state.ts";

const DUPLICATE_SCHEMA = "42P06";

/** Lowercase so quoting never changes meaning; 63 bytes is Postgres's NAMEDATALEN - 1. */
const IDENTIFIER_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Returns `name` when it is a safe schema/table identifier; throws `SQL_NAME_INVALID` otherwise. */
export function checkIdentifier(name: string): string {
  if (!IDENTIFIER_PATTERN.test(name)) throw sqlErrors.create("SQL_NAME_INVALID", { fields: { name } });
  return name;
}

/** `"name"`, after checking it. */
export function quoteIdentifier(name: string): string {
  return `"${checkIdentifier(name)}"`;
}

/** The schema a system lives in by default: `flash-sale` → `flash_sale`. */
export function schemaName(system: string): string {
  return checkIdentifier(system.replaceAll("-", "_"));
}

/**
 * Creates `schema` unless it exists. Safe when several processes start at once:
 * concurrent `CREATE SCHEMA IF NOT EXISTS` can still collide on the catalog's unique
 * index (23505) or report 42P06; either means another process created it.
 */
export async function ensureSchema(db: Queryable, schema: string): Promise<void> {
  try {
    await db.exec(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(schema)}`);
  } catch (err) {
    if (!isUniqueViolation(err) && sqlState(err) !== DUPLICATE_SCHEMA) throw err;
  }
}
