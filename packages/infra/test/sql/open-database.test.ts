import assert from "node:assert/strict";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { dataDirFor, openDatabase } from "../../src/sql/open-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import { quoteIdentifier, schemaName } from "../../src/sql/sql-schema.ts";

test("the data directory is $CASEBOOK_DATA/<system>, by default <cwd>/.casebook-data/<system>", (t) => {
  if (engineFree(t)) return;
  assert.equal(dataDirFor("payments", {}, "/srv/app"), "/srv/app/.casebook-data/payments");
  assert.equal(
    dataDirFor("payments", { CASEBOOK_DATA: "/var/lib/casebook" }, "/srv/app"),
    "/var/lib/casebook/payments",
  );
  assert.equal(dataDirFor("payments", { CASEBOOK_DATA: "data" }, "/srv/app"), "/srv/app/data/payments");
  for (const bad of ["../etc", "Payments", "a/b", ""]) {
    assert.throws(
      () => dataDirFor(bad, {}, "/srv/app"),
      (err) => sqlErrors.is(err, "SQL_NAME_INVALID"),
      bad,
    );
  }
});

test("a system's schema is its name with '-' as '_'; unsafe names are refused", (t) => {
  if (engineFree(t)) return;
  assert.equal(schemaName("flash-sale"), "flash_sale");
  assert.throws(
    () => quoteIdentifier('x"; DROP TABLE y; --'),
    (err) => sqlErrors.is(err, "SQL_NAME_INVALID"),
  );
  assert.throws(
    () => quoteIdentifier("a".repeat(64)),
    (err) => sqlErrors.is(err, "SQL_NAME_INVALID"),
  );
});

test("without a URL it opens PGlite in $CASEBOOK_DATA/<system>, in the system's schema", async (t) => {
  if (engineFree(t)) return;
  const root = await mkdtemp(join(tmpdir(), "casebook-open-"));
  try {
    // An empty DATABASE_URL counts as unset, as in a shell `DATABASE_URL= npm start`.
    const db = await openDatabase({ system: "flash-sale", env: { CASEBOOK_DATA: root, DATABASE_URL: "" } });
    try {
      assert.equal(db.engine, "pglite");
      assert.equal(db.schema, "flash_sale");
      await db.exec("CREATE TABLE tickets (id int)");
      const { rows } = await db.query("SELECT schemaname FROM pg_tables WHERE tablename = 'tickets'");
      assert.deepEqual(rows, [{ schemaname: "flash_sale" }]);
    } finally {
      await db.close();
    }
    assert.ok((await stat(join(root, "flash-sale", "PG_VERSION"))).isFile());
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("a malformed DATABASE_URL fails the start naming the variable, not its value", async (t) => {
  if (engineFree(t)) return;
  const secret = "mysql://admin:hunter2@db/x";
  await assert.rejects(openDatabase({ system: "payments", env: { DATABASE_URL: secret } }), (err) => {
    assert.ok(sqlErrors.is(err, "SQL_CONFIG_INVALID"));
    assert.equal(err.fields.variable, "DATABASE_URL");
    assert.ok(!JSON.stringify({ ...err.fields, message: err.message }).includes("hunter2"));
    return true;
  });
});

test("with DATABASE_URL it opens PostgreSQL and creates the system's schema", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const schema = uniqueName("sqlopen");
  const db = await openDatabase({
    system: "payments",
    schema,
    env: { DATABASE_URL: url },
    pool: { maxConnections: 2 },
  });
  try {
    assert.equal(db.engine, "postgres");
    await db.ping();
    const { rows } = await db.query(
      "SELECT current_setting('application_name') AS app, current_schema() AS schema",
    );
    assert.deepEqual(rows, [{ app: "casebook-payments", schema }]);
  } finally {
    await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await db.close();
  }
});

test("replicas starting at once all succeed in creating the one schema they share", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const rounds = 5;
  for (let round = 0; round < rounds; round++) {
    const schema = uniqueName("sqlrace");
    const opened: PromiseSettledResult<Database>[] = await Promise.allSettled(
      [1, 2, 3, 4].map(() => openDatabase({ system: "payments", schema, url, pool: { maxConnections: 1 } })),
    );
    const dbs = opened.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    try {
      assert.deepEqual(
        opened.map((o) => o.status),
        ["fulfilled", "fulfilled", "fulfilled", "fulfilled"],
        String(opened.find((o) => o.status === "rejected")?.reason),
      );
    } finally {
      await dbs[0]?.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
      await Promise.all(dbs.map((db) => db.close()));
    }
  }
});
