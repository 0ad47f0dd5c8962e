/**
 * What a table is, as the catalog says: its columns (name, type, nullability, default) and
 * its constraints and indexes (as PostgreSQL prints them), names included. Two tables with the
 * same shape were made by equivalent DDL — how a test proves a DDL helper still builds the
 * table a hand-written migration made.
 *
 * @example
 * assert.deepEqual(await tableShape(a, "merchant_api_keys"), await tableShape(b, "merchant_api_keys"));
 */
import type { Queryable } from "@casebook/infra/sql/sql";

export interface TableShape {
  columns: string[];
  constraints: string[];
  indexes: string[];
}

/** The shape of `table` in the current schema (the first of the search_path holding it). */
export async function tableShape(db: Queryable, table: string): Promise<TableShape> {
  const columns = await db.query<{ line: string }>(
    `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
            || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
            || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') AS line
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  const constraints = await db.query<{ line: string }>(
    `SELECT conname || ' ' || pg_get_constraintdef(oid) AS line FROM pg_constraint
      WHERE conrelid = $1::regclass ORDER BY conname`,
    [table],
  );
  const indexes = await db.query<{ line: string }>(
    `SELECT pg_get_indexdef(indexrelid) AS line FROM pg_index WHERE indrelid = $1::regclass
      ORDER BY indexrelid::regclass::text`,
    [table],
  );
  return {
    columns: columns.rows.map((row) => row.line),
    constraints: constraints.rows.map((row) => row.line),
    indexes: indexes.rows.map((row) => row.line),
  };
}
