/** What is particular to PGlite on its own thread: the bound on waiting calls, a dead thread, the directory kept. */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { MEMORY_DATA_DIR } from "../../src/sql/pglite-database.ts";
import { openPgliteThreadDatabase } from "../../src/sql/pglite-thread-database.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";

test("past maxPending waiting calls a call is refused SQL_UNAVAILABLE at once; the waiting ones all answer", async () => {
  const db = await openPgliteThreadDatabase({ dataDir: MEMORY_DATA_DIR, maxPending: 3 });
  try {
    const waiting = [1, 2, 3].map((n) => db.query<{ n: number }>("SELECT $1::int AS n", [n]));
    await assert.rejects(db.query("SELECT 4"), (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"));
    assert.deepEqual(
      (await Promise.all(waiting)).map((result) => result.rows[0]!.n),
      [1, 2, 3],
    );
    assert.equal((await db.query<{ n: number }>("SELECT 5 AS n")).rows[0]!.n, 5, "room again once answered");
  } finally {
    await db.close();
  }
});

test("a call to the database from inside its own transaction is refused after transactionWaitMs, unsent, not a deadlock", async () => {
  const db = await openPgliteThreadDatabase({
    dataDir: MEMORY_DATA_DIR,
    maxPending: 10,
    transactionWaitMs: 200,
  });
  try {
    await db.exec("CREATE TABLE notes (body text NOT NULL)");
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO notes VALUES ('inside')");
        await db.query("INSERT INTO notes VALUES ('nested')");
      }),
      (err) => sqlErrors.is(err, "SQL_TRANSACTION_NESTED") && /Waited 200 ms/.test((err as Error).message),
    );
    assert.deepEqual(
      (await db.query("SELECT body FROM notes")).rows,
      [],
      "the transaction was rolled back, and the refused call was never run after it",
    );
  } finally {
    await db.close();
  }
});

test("calls from outside an open transaction wait for it, then run in the order they were made", async () => {
  const db = await openPgliteThreadDatabase({ dataDir: MEMORY_DATA_DIR, maxPending: 10 });
  try {
    await db.exec("CREATE TABLE notes (n int NOT NULL)");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = db.transaction(async (tx) => {
      await tx.query("INSERT INTO notes VALUES (1)");
      await gate;
      await tx.query("INSERT INTO notes VALUES (2)");
    });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the transaction is open
    const seen = db.query<{ n: number }>("SELECT n FROM notes ORDER BY n");
    const second = db.transaction(async (tx) => {
      await tx.query("INSERT INTO notes VALUES (3)");
    });
    const last = db.query<{ count: number }>("SELECT count(*)::int AS count FROM notes");
    release();
    await Promise.all([first, second]);
    assert.deepEqual(
      (await seen).rows.map((row) => row.n),
      [1, 2],
      "the outside read ran after the first transaction committed, before the second began",
    );
    assert.equal((await last).rows[0]!.count, 3, "the read made after the second transaction ran after it");
  } finally {
    await db.close();
  }
});

test("after close every call is refused SQL_UNAVAILABLE; the directory's data is there on reopening", async () => {
  const root = await mkdtemp(join(tmpdir(), "casebook-pglite-thread-"));
  try {
    const dataDir = join(root, "clicks");
    const first = await openPgliteThreadDatabase({ dataDir, maxPending: 10 });
    await first.exec("CREATE TABLE notes (body text NOT NULL)");
    await first.query("INSERT INTO notes VALUES ($1)", ["kept"]);
    await first.close();
    await assert.rejects(first.query("SELECT 1"), (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"));
    const second = await openPgliteThreadDatabase({ dataDir, maxPending: 10 });
    try {
      assert.deepEqual((await second.query("SELECT body FROM notes")).rows, [{ body: "kept" }]);
    } finally {
      await second.close();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
