import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import {
  applyMigrations,
  migration,
  migrationLockKey,
  pendingMigrations,
  readMigrations,
} from "../../src/sql/migrations.ts";
import { openPgDatabase } from "../../src/sql/pg-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import { quoteIdentifier } from "../../src/sql/sql-schema.ts";

async function withDir(files: Record<string, string>, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-migrations-"));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("readMigrations orders NNN_name.sql by number and ignores other files", async (t) => {
  if (engineFree(t)) return;
  const files = { "010_later.sql": "SELECT 10;", "002_first.sql": "SELECT 2;", "README.md": "notes" };
  await withDir(files, async (dir) => {
    const found = await readMigrations(dir);
    assert.deepEqual(
      found.map((m) => [m.name, m.version, m.sql]),
      [
        ["002_first", 2, "SELECT 2;"],
        ["010_later", 10, "SELECT 10;"],
      ],
    );
  });
});

test("readMigrations refuses a misnamed .sql file and two files sharing a number", async (t) => {
  if (engineFree(t)) return;
  await withDir({ "1_too_short.sql": "" }, async (dir) => {
    await assert.rejects(readMigrations(dir), (err) => sqlErrors.is(err, "SQL_MIGRATION_INVALID"));
  });
  await withDir({ "001_Upper.sql": "" }, async (dir) => {
    await assert.rejects(readMigrations(dir), (err) => sqlErrors.is(err, "SQL_MIGRATION_INVALID"));
  });
  await withDir({ "001_a.sql": "", "001_b.sql": "" }, async (dir) => {
    await assert.rejects(readMigrations(dir), (err) => sqlErrors.is(err, "SQL_MIGRATION_INVALID"));
  });
});

test("the checksum ignores line endings and nothing else", (t) => {
  if (engineFree(t)) return;
  const unix = migration("001_a.sql", "CREATE TABLE a (n int);\nCREATE TABLE b (n int);\n");
  const windows = migration("001_a", "CREATE TABLE a (n int);\r\nCREATE TABLE b (n int);\r\n");
  const edited = migration("001_a.sql", "CREATE TABLE a (n int8);\nCREATE TABLE b (n int);\n");
  assert.equal(unix.checksum, windows.checksum);
  assert.notEqual(unix.checksum, edited.checksum);
  assert.match(unix.checksum, /^[0-9a-f]{64}$/);
});

test("pendingMigrations checks the recorded history against the files", (t) => {
  if (engineFree(t)) return;
  const [a, b, c] = [migration("001_a", "A"), migration("002_b", "B"), migration("003_c", "C")];
  assert.deepEqual(pendingMigrations([a, b, c], [{ name: a.name, checksum: a.checksum }]), [b, c]);
  assert.deepEqual(pendingMigrations([a, b, c], []), [a, b, c]);
  const missing = () => pendingMigrations([a], [{ name: "009_gone", checksum: "x" }]);
  assert.throws(missing, (err) => sqlErrors.is(err, "SQL_MIGRATION_UNKNOWN"));
  const edited = () => pendingMigrations([a], [{ name: a.name, checksum: b.checksum }]);
  assert.throws(edited, (err) => sqlErrors.is(err, "SQL_MIGRATION_CHECKSUM_MISMATCH"));
  const early = () => pendingMigrations([a, b, c], [{ name: c.name, checksum: c.checksum }]);
  assert.throws(early, (err) => sqlErrors.is(err, "SQL_MIGRATION_OUT_OF_ORDER"));
});

test("each schema has its own 64-bit migration lock key", (t) => {
  if (engineFree(t)) return;
  assert.equal(migrationLockKey("payments"), migrationLockKey("payments"));
  assert.notEqual(migrationLockKey("payments"), migrationLockKey("webhooks"));
  assert.ok(migrationLockKey("payments") >= -(2n ** 63n) && migrationLockKey("payments") < 2n ** 63n);
});

/** Each step leaves a row, and CREATE TABLE without IF NOT EXISTS fails if a step runs twice. */
function raceHistory() {
  return Array.from({ length: 6 }, (_, i) => {
    const step = String(i + 1).padStart(3, "0");
    const body =
      i === 0
        ? "CREATE TABLE race_log (step text NOT NULL, pid int NOT NULL);"
        : `CREATE TABLE race_t${step} (n int); SELECT pg_sleep(0.02);`;
    return migration(
      `${step}_race.sql`,
      `${body} INSERT INTO race_log VALUES ('${step}', pg_backend_pid());`,
    );
  });
}

test("four runners on four separate pools race on a fresh schema: every migration applied exactly once", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const rounds = 3;
  for (let round = 0; round < rounds; round++) {
    const schema = uniqueName("migrace");
    const runners: Database[] = [1, 2, 3, 4].map((n) =>
      openPgDatabase({ url, applicationName: `casebook-migration-race-${n}`, maxConnections: 2 }),
    );
    try {
      const history = raceHistory();
      const reports = await Promise.all(runners.map((db) => applyMigrations(db, history, { schema })));
      assert.deepEqual(
        reports.flatMap((r) => r.applied).sort(),
        history.map((m) => m.name),
      );
      const db = runners[0]!;
      const log = await db.query<{ step: string; n: bigint }>(
        `SELECT step, count(*) AS n FROM ${quoteIdentifier(schema)}.race_log GROUP BY step ORDER BY step`,
      );
      assert.deepEqual(
        log.rows,
        history.map((m) => ({ step: m.name.slice(0, 3), n: 1n })),
      );
      const recorded = await db.query(`SELECT name FROM ${quoteIdentifier(schema)}.casebook_migrations`);
      assert.equal(recorded.rowCount, history.length);
    } finally {
      await runners[0]!.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
      await Promise.all(runners.map((db) => db.close()));
    }
  }
});
