/** What is particular to PGlite: its data directory, its lock, and its single connection. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { lockPathOf } from "../../src/sql/data-dir-lock.ts";
import { MEMORY_DATA_DIR, openPgliteDatabase } from "../../src/sql/pglite-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";

async function withTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-pglite-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("data written before close is there after reopening the directory", async () => {
  await withTempDir(async (root) => {
    const dataDir = join(root, "nested", "payments");
    const first = await openPgliteDatabase({ dataDir });
    await first.exec("CREATE TABLE kept (id int8 PRIMARY KEY, note text)");
    await first.transaction(async (tx) => {
      await tx.query("INSERT INTO kept VALUES ($1, $2)", [2n ** 62n, "survives restarts"]);
    });
    await first.close();
    const second = await openPgliteDatabase({ dataDir });
    try {
      const { rows } = await second.query("SELECT id, note FROM kept");
      assert.deepEqual(rows, [{ id: 2n ** 62n, note: "survives restarts" }]);
    } finally {
      await second.close();
    }
  });
});

test("a data directory already open is refused, and free again after close", async () => {
  await withTempDir(async (root) => {
    const dataDir = join(root, "chat");
    const owner = await openPgliteDatabase({ dataDir });
    assert.equal((await readFile(lockPathOf(dataDir), "utf8")).trim(), String(process.pid));
    await assert.rejects(openPgliteDatabase({ dataDir }), (err) => {
      assert.ok(sqlErrors.is(err, "SQL_DATA_DIR_IN_USE"));
      assert.equal(err.fields.pid, process.pid);
      return true;
    });
    await owner.close();
    await assert.rejects(stat(lockPathOf(dataDir)), { code: "ENOENT" });
    const next = await openPgliteDatabase({ dataDir });
    await next.close();
  });
});

test("a lock left by a dead process is taken over", async () => {
  await withTempDir(async (root) => {
    const dataDir = join(root, "feed");
    // A pid that certainly existed and has exited: a child we ran to completion.
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    await writeFile(lockPathOf(dataDir), `${dead}\n`);
    const db = await openPgliteDatabase({ dataDir });
    try {
      assert.equal((await readFile(lockPathOf(dataDir), "utf8")).trim(), String(process.pid));
    } finally {
      await db.close();
    }
  });
});

describe("one in-memory PGlite, shared", () => {
  let db: Database;
  before(async () => {
    // The default bound on a held call (30 s): twenty queued transactions on a slow machine may
    // take longer than a short bound, and must still all run.
    db = await openPgliteDatabase({ dataDir: MEMORY_DATA_DIR });
  });
  after(async () => {
    await db.close();
  });

  test("concurrent read-modify-write transactions never interleave: no update is lost, even without FOR UPDATE", async () => {
    await db.exec("CREATE TABLE counter (n int8 NOT NULL); INSERT INTO counter VALUES (0);");
    const order: string[] = [];
    const writers = 20;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        db.transaction(async (tx) => {
          order.push(`begin ${i}`);
          const { rows } = await tx.query<{ n: bigint }>("SELECT n FROM counter");
          // Yield to the event loop between read and write: an interleaving engine would lose updates here.
          await new Promise((resolve) => setImmediate(resolve));
          await tx.query("UPDATE counter SET n = $1", [rows[0]!.n + 1n]);
          order.push(`end ${i}`);
        }),
      ),
    );
    assert.equal((await db.query<{ n: bigint }>("SELECT n FROM counter")).rows[0]!.n, BigInt(writers));
    const serial = Array.from({ length: writers }, (_, i) => [`begin ${i}`, `end ${i}`]).flat();
    assert.deepEqual(order, serial, "each transaction ran whole before the next began");
  });

  test("SKIP LOCKED never skips on PGlite: a second claimer waits for the first to commit, then sees its claim", async () => {
    await db.exec(
      "CREATE TABLE jobs (id int PRIMARY KEY, owner text); INSERT INTO jobs VALUES (1, NULL), (2, NULL);",
    );
    const events: string[] = [];
    const claim = (owner: string) =>
      db.transaction(async (tx) => {
        events.push(`${owner} claims`);
        const { rows } = await tx.query<{ id: number }>(
          "SELECT id FROM jobs WHERE owner IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
        );
        await tx.query("UPDATE jobs SET owner = $1 WHERE id = $2", [owner, rows[0]!.id]);
        events.push(`${owner} commits`);
        return rows[0]!.id;
      });
    const [a, b] = await Promise.all([claim("a"), claim("b")]);
    assert.deepEqual([a, b], [1, 2]);
    assert.deepEqual(events, ["a claims", "a commits", "b claims", "b commits"]);
  });
});

test("calling the database from inside its own transaction is refused after transactionWaitMs, never run, instead of waiting forever", async () => {
  // A call from inside a transaction is refused once it has waited this long (transaction-gate.ts).
  const db = await openPgliteDatabase({ dataDir: MEMORY_DATA_DIR, transactionWaitMs: 300 });
  try {
    await db.exec("CREATE TABLE nested_notes (body text NOT NULL)");
    const nested = db.transaction(async (tx) => {
      await tx.query("INSERT INTO nested_notes VALUES ('inside')");
      await db.query("INSERT INTO nested_notes VALUES ('nested')");
    });
    await assert.rejects(
      nested,
      (err) => sqlErrors.is(err, "SQL_TRANSACTION_NESTED") && /Waited 300 ms/.test((err as Error).message),
    );
    const inner = db.transaction(async () => db.transaction(async () => 1));
    await assert.rejects(inner, (err) => sqlErrors.is(err, "SQL_TRANSACTION_NESTED"));
    assert.deepEqual(
      (await db.query("SELECT body FROM nested_notes")).rows,
      [],
      "rolled back, and the refused call never ran after it: still usable afterwards",
    );
  } finally {
    await db.close();
  }
});

test("a schema option sets the session's search_path; a closed database reports SQL_UNAVAILABLE", async () => {
  const db = await openPgliteDatabase({ dataDir: MEMORY_DATA_DIR, schema: "only_mine" });
  assert.equal(db.schema, "only_mine");
  try {
    // Nothing else is on the path: without the schema, CREATE has nowhere to go (3F000).
    await assert.rejects(db.exec("CREATE TABLE t (n int)"), { code: "3F000" });
    await db.exec("CREATE SCHEMA only_mine; CREATE TABLE t (n int);");
    const { rows } = await db.query("SELECT schemaname FROM pg_tables WHERE tablename = 't'");
    assert.deepEqual(rows, [{ schemaname: "only_mine" }]);
  } finally {
    await db.close();
  }
  await db.close(); // idempotent
  await assert.rejects(db.query("SELECT 1"), (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"));
  await assert.rejects(db.ping(), (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"));
});
