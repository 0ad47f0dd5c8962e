/**
 * Errors the SQL adapter raises itself. Engine errors (constraint violations,
 * serialization failures) are NOT wrapped: they keep their SQLSTATE so callers can
 * branch (`sql-state.ts`); only losing the engine, or the server cancelling a statement at
 * `statement_timeout` (57014), becomes `SQL_UNAVAILABLE`, which the HTTP layer answers with 503.
 *
 * @example
 * if (sqlErrors.is(err, "SQL_UNAVAILABLE")) return reply.code(503).send();
 */
import { defineErrors } from "@casebook/kit/errors";

export const sqlErrors = defineErrors({
  SQL_UNAVAILABLE: {
    status: 503,
    message: "The database is unavailable or did not answer in time; retry shortly.",
  },
  SQL_CONFIG_INVALID: {
    status: 500,
    message:
      "DATABASE_URL must look like postgres://user@host:5432/database; unset it to use the embedded PGlite.",
  },
  SQL_DATA_DIR_IN_USE: {
    status: 503,
    message:
      "Another live process holds this embedded database's data directory; stop it, or point CASEBOOK_DATA elsewhere.",
  },
  SQL_TRANSACTION_NESTED: {
    status: 500,
    message: "The database was called from inside its own transaction; use the `tx` handed to the callback.",
  },
  SQL_TRANSACTION_CLOSED: {
    status: 500,
    message: "A transaction handle was used after its transaction ended; keep `tx` inside the callback.",
  },
  SQL_NAME_INVALID: {
    status: 500,
    message: "A schema or system name must be lowercase letters, digits and '_' (63 at most).",
  },
  SQL_MIGRATION_INVALID: {
    status: 500,
    message: "A migration file is misnamed or duplicated; name them NNN_name.sql with unique numbers.",
  },
  SQL_MIGRATION_CHECKSUM_MISMATCH: {
    status: 500,
    message: "An applied migration file was edited; restore it and add a new migration for the change.",
  },
  SQL_MIGRATION_UNKNOWN: {
    status: 500,
    message: "The database has a migration this code does not know; deploy the code that wrote it.",
  },
  SQL_MIGRATION_OUT_OF_ORDER: {
    status: 500,
    message: "A pending migration sorts before one already applied; renumber it after the last applied.",
  },
});

export type SqlErrorCode = keyof typeof sqlErrors.specs;
