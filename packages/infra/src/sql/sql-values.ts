/**
 * Makes both engines hand back the same JS values (see `sql.ts` for the table).
 * Out of the box they differ: `pg` returns `int8` as a string, PGlite as a number
 * when it fits and a bigint when it does not — so a balance would change type at
 * 2^53. Both now return `bigint`, always.
 *
 * @example
 * new pg.Pool({ types: pgTypesWithBigint });
 * new PGlite({ parsers: pgliteParsers });
 */
import { types as pgliteTypes } from "@electric-sql/pglite";
import pg from "pg";

const INT8_OID = 20;
const INT8_ARRAY_OID = 1016;

function toBigint(value: string): bigint {
  return BigInt(value);
}

/** Maps the leaves of a (possibly nested) parsed array; NULL elements stay null. */
function mapLeaves(value: unknown, leaf: (text: string) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => mapLeaves(item, leaf));
  return typeof value === "string" ? leaf(value) : value;
}

/**
 * Per-pool type parsers for `pg` (never the global `pg.types`, which would change
 * every other pool in the process).
 */
type TypeParserLookup = (oid: number, format?: "text" | "binary") => (text: string) => unknown;
const builtinParser = pg.types.getTypeParser as TypeParserLookup;
/** pg's own _int8 parser yields strings (nested for multi-dimensional arrays). */
const int8ArrayStrings = builtinParser(INT8_ARRAY_OID, "text");

export const pgTypesWithBigint: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (format === "binary") return builtinParser(oid, format);
    if (oid === INT8_OID) return toBigint;
    if (oid === INT8_ARRAY_OID) return (text: string) => mapLeaves(int8ArrayStrings(text), toBigint);
    return builtinParser(oid, "text");
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/** PGlite derives each array type's parser from its element's, so `int8[]` follows. */
export const pgliteParsers = { [pgliteTypes.INT8]: toBigint };

/** A JSON-ish object literal: not a Date, Buffer, array or class instance, and not pg's `toPostgres` hook. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return typeof (value as { toPostgres?: unknown }).toPostgres !== "function";
}

/** JSON with bigints written as decimal strings (JSON has no bigint; a float would round). */
export function jsonStringify(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item));
}

/**
 * `pg` serializes a plain object with JSON.stringify, which throws on a bigint; PGlite
 * writes the bigint as a string. Pre-serializing plain objects the PGlite way makes
 * the two agree.
 */
export function pgParams(params: readonly unknown[] | undefined): unknown[] | undefined {
  if (params === undefined) return undefined;
  return params.map((value) => (isPlainObject(value) ? jsonStringify(value) : value));
}
