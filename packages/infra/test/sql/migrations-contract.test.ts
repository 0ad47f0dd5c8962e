/** The migration runner's contract, on PGlite (memory, disk) and PostgreSQL alike. */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { applyMigrations, migration } from "../../src/sql/migrations.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import { quoteIdentifier } from "../../src/sql/sql-schema.ts";
import { type SqlSubject, sqlBackends } from "./sql-backends.ts";

/** Non-idempotent on purpose: running any of them twice fails or leaves a second log row. */
const history = [
  migration(
    "001_accounts.sql",
    "CREATE TABLE accounts (id int8 PRIMARY KEY, balance int8 NOT NULL DEFAULT 0);",
  ),
  migration(
    "002_log.sql",
    "CREATE TABLE migration_log (step text NOT NULL); INSERT INTO migration_log VALUES ('002');",
  ),
  migration(
    "003_owner.sql",
    "ALTER TABLE accounts ADD COLUMN owner text; INSERT INTO migration_log VALUES ('003');",
  ),
];

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

contractSuite<SqlSubject>("sql migrations", sqlBackends, (it) => {
  it("applies pending migrations in order, each once, recording name and checksum", async (subject) => {
    const schema = subject.scratchSchema("mig_order");
    const first = await applyMigrations(subject.db, history.slice(0, 2), { schema });
    assert.deepEqual(first, { applied: ["001_accounts", "002_log"], skipped: [] });
    const second = await applyMigrations(subject.db, history, { schema });
    assert.deepEqual(second, { applied: ["003_owner"], skipped: ["001_accounts", "002_log"] });
    const again = await applyMigrations(subject.db, history, { schema });
    assert.deepEqual(again.applied, []);
    const { rows } = await subject.db.query<{ name: string; checksum: string; applied_at: Date }>(
      `SELECT name, checksum, applied_at FROM ${quoteIdentifier(schema)}.casebook_migrations ORDER BY name`,
    );
    assert.deepEqual(
      rows.map((r) => [r.name, r.checksum]),
      history.map((m) => [m.name, m.checksum]),
    );
    assert.ok(rows.every((r) => r.applied_at instanceof Date));
    const log = await subject.db.query(
      `SELECT step FROM ${quoteIdentifier(schema)}.migration_log ORDER BY step`,
    );
    assert.deepEqual(log.rows, [{ step: "002" }, { step: "003" }]);
  });

  it("a failing migration is rolled back whole and not recorded", async (subject) => {
    const schema = subject.scratchSchema("mig_fail");
    const broken = migration("002_broken.sql", "CREATE TABLE half_done (n int); SELECT 1/0;");
    const caught = await rejection(applyMigrations(subject.db, [history[0]!, broken], { schema }));
    assert.equal((caught as { code?: string }).code, "22012");
    const tables = await subject.db.query(
      "SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'half_done'",
      [schema],
    );
    assert.equal(tables.rowCount, 0);
    const recorded = await subject.db.query(
      `SELECT name FROM ${quoteIdentifier(schema)}.casebook_migrations`,
    );
    assert.deepEqual(recorded.rows, [{ name: "001_accounts" }]);
  });

  it("an applied migration whose text changed is refused before anything runs", async (subject) => {
    const schema = subject.scratchSchema("mig_edit");
    await applyMigrations(subject.db, history.slice(0, 1), { schema });
    const edited = migration("001_accounts.sql", `${history[0]!.sql}\n-- edited`);
    const caught = await rejection(applyMigrations(subject.db, [edited, history[1]!], { schema }));
    assert.ok(sqlErrors.is(caught, "SQL_MIGRATION_CHECKSUM_MISMATCH"));
    assert.equal(sqlErrors.is(caught) && caught.fields.name, "001_accounts");
    const recorded = await subject.db.query(
      `SELECT name FROM ${quoteIdentifier(schema)}.casebook_migrations`,
    );
    assert.equal(recorded.rowCount, 1, "002 must not run after the refusal");
  });

  it("an applied migration the code lacks, or a pending one numbered below the last applied, is refused", async (subject) => {
    const schema = subject.scratchSchema("mig_hist");
    const standalone = migration("003_standalone.sql", "CREATE TABLE standalone (n int);");
    await applyMigrations(subject.db, [history[0]!, standalone], { schema });
    const lacking = await rejection(applyMigrations(subject.db, [history[0]!], { schema }));
    assert.ok(sqlErrors.is(lacking, "SQL_MIGRATION_UNKNOWN"));
    const early = await rejection(
      applyMigrations(subject.db, [history[0]!, history[1]!, standalone], { schema }),
    );
    assert.ok(sqlErrors.is(early, "SQL_MIGRATION_OUT_OF_ORDER"));
  });

  // PostgreSQL: four runners on four pooled connections overlap and queue on the advisory
  // lock. PGlite: they queue on its single connection. Either way each migration runs once.
  it("four concurrent runners on one database apply each migration exactly once", async (subject) => {
    const schema = subject.scratchSchema("mig_race");
    const reports = await Promise.all(
      [1, 2, 3, 4].map(() => applyMigrations(subject.db, history, { schema })),
    );
    const appliedBy = reports.flatMap((r) => r.applied).sort();
    assert.deepEqual(
      appliedBy,
      history.map((m) => m.name),
    );
    const log = await subject.db.query(
      `SELECT step FROM ${quoteIdentifier(schema)}.migration_log ORDER BY step`,
    );
    assert.deepEqual(log.rows, [{ step: "002" }, { step: "003" }]);
  });

  it("migrations default to the database's own schema", async ({ db }) => {
    const own = migration("001_own_schema_table.sql", "CREATE TABLE own_schema_table (n int);");
    await applyMigrations(db, [own]);
    const where = await db.query<{ schemaname: string }>(
      "SELECT schemaname FROM pg_tables WHERE tablename = 'own_schema_table'",
    );
    assert.deepEqual(where.rows, [{ schemaname: db.schema }]);
  });
});
