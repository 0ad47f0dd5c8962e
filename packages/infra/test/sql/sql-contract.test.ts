/**
 * The SQL contract: every case runs on PGlite in memory, PGlite on disk and the real
 * PostgreSQL. Where PGlite's single connection changes WHY a property holds (claims,
 * read-modify-write), the case says so; the README's sql section lists the differences.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { IsolationLevel } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import {
  isCheckViolation,
  isForeignKeyViolation,
  isUniqueViolation,
  SqlState,
  sqlConstraint,
  sqlState,
} from "../../src/sql/sql-state.ts";
import { type SqlSubject, sqlBackends } from "./sql-backends.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

contractSuite<SqlSubject>("sql database", sqlBackends, (it) => {
  it("query binds $1..$n and reports rowCount", async ({ db }) => {
    await db.exec("CREATE TABLE params (id int8 PRIMARY KEY, name text NOT NULL, score int4)");
    const inserted = await db.query("INSERT INTO params VALUES ($1, $2, $3), ($4, $5, $6), ($7, $8, NULL)", [
      1n,
      "ada",
      7,
      2,
      "bob",
      9,
      3,
      "cy",
    ]);
    assert.equal(inserted.rowCount, 3);
    const found = await db.query<{ name: string; score: number }>(
      "SELECT name, score FROM params WHERE id = $1 AND name = $2",
      [2, "bob"],
    );
    assert.deepEqual(found.rows, [{ name: "bob", score: 9 }]);
    assert.equal(found.rowCount, 1);
    assert.equal((await db.query("UPDATE params SET score = 0 WHERE id > $1", [1])).rowCount, 2);
    assert.equal((await db.query("DELETE FROM params WHERE score IS NULL")).rowCount, 0);
    assert.equal((await db.query("SELECT $1::text IS NULL AS missing", [null])).rows[0]?.missing, true);
  });

  it("exec runs a script of several statements", async ({ db }) => {
    await db.exec(
      "CREATE TABLE script (n int); INSERT INTO script VALUES (1); INSERT INTO script VALUES (2);",
    );
    assert.deepEqual((await db.query("SELECT n FROM script ORDER BY n")).rows, [{ n: 1 }, { n: 2 }]);
  });

  it("transaction commits when the callback resolves and returns its value", async ({ db }) => {
    await db.exec("CREATE TABLE committed (n int)");
    const value = await db.transaction(async (tx) => {
      await tx.query("INSERT INTO committed VALUES (1), (2)");
      return (await tx.query<{ c: bigint }>("SELECT count(*) AS c FROM committed")).rows[0]!.c;
    });
    assert.equal(value, 2n);
    assert.equal((await db.query("SELECT * FROM committed")).rowCount, 2);
  });

  it("transaction rolls back when the callback throws, and rethrows that same error", async ({ db }) => {
    await db.exec("CREATE TABLE rolled (n int)");
    const original = new Error("callback failed");
    const caught = await rejection(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO rolled VALUES (1)");
        throw original;
      }),
    );
    assert.equal(caught, original);
    assert.equal((await db.query("SELECT * FROM rolled")).rowCount, 0);
  });

  it("an engine error rolls the transaction back and keeps its SQLSTATE", async ({ db }) => {
    await db.exec("CREATE TABLE unique_names (name text CONSTRAINT unique_names_pk PRIMARY KEY)");
    await db.query("INSERT INTO unique_names VALUES ('taken')");
    const caught = await rejection(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO unique_names VALUES ('fresh')");
        await tx.query("INSERT INTO unique_names VALUES ('taken')");
      }),
    );
    assert.equal(sqlState(caught), SqlState.uniqueViolation);
    assert.ok(isUniqueViolation(caught, "unique_names_pk"));
    assert.ok(!isUniqueViolation(caught, "some_other_constraint"));
    assert.deepEqual((await db.query("SELECT name FROM unique_names")).rows, [{ name: "taken" }]);
  });

  it("a transaction handle refuses use after its transaction ended", async ({ db }) => {
    let leaked: { query(text: string): Promise<unknown> } | undefined;
    await db.transaction(async (tx) => {
      leaked = tx;
    });
    assert.ok(sqlErrors.is(await rejection(leaked!.query("SELECT 1")), "SQL_TRANSACTION_CLOSED"));
  });

  it("transaction runs at the isolation level asked for", async ({ db }) => {
    const levels: IsolationLevel[] = ["read committed", "repeatable read", "serializable"];
    for (const isolation of levels) {
      const shown = await db.transaction(
        async (tx) =>
          (await tx.query<{ level: string }>("SELECT current_setting('transaction_isolation') AS level"))
            .rows[0]!.level,
        { isolation },
      );
      assert.equal(shown, isolation);
    }
  });

  it("integrity and syntax errors carry their SQLSTATE and constraint", async ({ db }) => {
    await db.exec(`
      CREATE TABLE parents (id int PRIMARY KEY);
      CREATE TABLE children (
        id int PRIMARY KEY,
        parent int NOT NULL CONSTRAINT children_parent_fk REFERENCES parents (id),
        age int CONSTRAINT children_age_check CHECK (age >= 0)
      );
      INSERT INTO parents VALUES (1);`);
    const fk = await rejection(db.query("INSERT INTO children VALUES (1, 99, 1)"));
    assert.ok(isForeignKeyViolation(fk));
    assert.equal(sqlConstraint(fk), "children_parent_fk");
    const check = await rejection(db.query("INSERT INTO children VALUES (1, 1, -1)"));
    assert.ok(isCheckViolation(check));
    assert.equal(sqlConstraint(check), "children_age_check");
    assert.equal(sqlState(await rejection(db.query("INSERT INTO children VALUES (1, NULL, 1)"))), "23502");
    assert.equal(sqlState(await rejection(db.query("SELECT * FROM no_such_table"))), SqlState.undefinedTable);
    assert.equal(sqlState(await rejection(db.query("SELEC 1"))), SqlState.syntaxError);
    assert.equal(sqlState(await rejection(db.query("SELECT 1/0"))), "22012");
  });

  it("int8 and int8[] come back as bigint on both sides of 2^53; numeric as an exact string", async ({
    db,
  }) => {
    await db.exec("CREATE TABLE money (id int8 PRIMARY KEY, minor int8 NOT NULL)");
    const extremes = [0n, 1n, -1n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)];
    for (const [i, minor] of extremes.entries())
      await db.query("INSERT INTO money VALUES ($1, $2)", [i, minor]);
    const { rows } = await db.query<{ minor: bigint }>("SELECT minor FROM money ORDER BY id");
    assert.deepEqual(
      rows.map((r) => r.minor),
      extremes,
    );
    const stats = await db.query<{ n: bigint; total: string; total8: bigint; small: number; ids: bigint[] }>(
      `SELECT count(*) AS n, sum(minor) AS total, sum(minor) FILTER (WHERE minor BETWEEN -1 AND 1)::int8 AS total8,
              1::int4 AS small, array_agg(id ORDER BY id) AS ids FROM money`,
    );
    assert.deepEqual(stats.rows[0], {
      n: 6n,
      total: String(2n ** 53n),
      total8: 0n,
      small: 1,
      ids: [0n, 1n, 2n, 3n, 4n, 5n],
    });
    const grid = await db.query<{ g: (bigint | null)[][] }>("SELECT '{{1,2},{3,NULL}}'::int8[] AS g");
    assert.deepEqual(grid.rows[0]!.g, [
      [1n, 2n],
      [3n, null],
    ]);
    const exact = await db.query<{ d: string }>("SELECT $1::numeric * 3 AS d", [
      "12345678901234567890.123456789",
    ]);
    assert.equal(exact.rows[0]!.d, "37037036703703703670.370370367");
  });

  it("jsonb round-trips objects, arrays given as JSON text, and bigints inside objects as strings", async ({
    db,
  }) => {
    await db.exec("CREATE TABLE docs (id int PRIMARY KEY, body jsonb NOT NULL)");
    await db.query("INSERT INTO docs VALUES (1, $1), (2, $2), (3, $3)", [
      { a: 1, nested: { list: [1, "two", null] } },
      JSON.stringify([1, { b: true }]),
      { amount: 2n ** 60n },
    ]);
    const { rows } = await db.query<{ body: unknown }>("SELECT body FROM docs ORDER BY id");
    assert.deepEqual(
      rows.map((r) => r.body),
      [{ a: 1, nested: { list: [1, "two", null] } }, [1, { b: true }], { amount: String(2n ** 60n) }],
    );
    const picked = await db.query("SELECT id FROM docs WHERE body @> $1", [{ nested: { list: ["two"] } }]);
    assert.deepEqual(picked.rows, [{ id: 1 }]);
  });

  it("timestamptz round-trips a Date instant, and sessions run in UTC", async ({ db }) => {
    const instant = new Date("2024-02-29T23:59:58.123Z");
    const { rows } = await db.query<{ at: Date; text: string; zone: string }>(
      "SELECT $1::timestamptz AS at, ($1::timestamptz)::text AS text, current_setting('TimeZone') AS zone",
      [instant],
    );
    assert.ok(rows[0]!.at instanceof Date);
    assert.equal(rows[0]!.at.toISOString(), instant.toISOString());
    assert.equal(rows[0]!.text, "2024-02-29 23:59:58.123+00");
    assert.equal(rows[0]!.zone, "UTC");
  });

  it("a deferred constraint trigger rejects an unbalanced transaction at COMMIT, not at the statement", async ({
    db,
  }) => {
    await db.exec(`
      CREATE TABLE entries (txn int NOT NULL, amount int8 NOT NULL);
      CREATE FUNCTION entries_balance() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (SELECT sum(amount) FROM entries WHERE txn = NEW.txn) <> 0 THEN
          RAISE EXCEPTION 'entries of transaction % do not sum to zero', NEW.txn;
        END IF;
        RETURN NULL;
      END $$;
      CREATE CONSTRAINT TRIGGER entries_balanced AFTER INSERT ON entries
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION entries_balance();`);
    const statementsRun: number[] = [];
    const caught = await rejection(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO entries VALUES (1, 500)");
        statementsRun.push(1);
        await tx.query("INSERT INTO entries VALUES (1, -400)");
        statementsRun.push(2);
      }),
    );
    assert.deepEqual(statementsRun, [1, 2], "each statement succeeded; only COMMIT failed");
    assert.equal(sqlState(caught), SqlState.raiseException);
    assert.match((caught as Error).message, /entries of transaction 1 do not sum to zero/);
    await db.transaction(async (tx) => {
      await tx.query("INSERT INTO entries VALUES (2, 500), (2, -500)");
    });
    assert.deepEqual(
      (await db.query("SELECT txn, sum(amount)::int8 AS total FROM entries GROUP BY txn")).rows,
      [{ txn: 2, total: 0n }],
    );
  });

  // PostgreSQL: SKIP LOCKED skips rows an open claim holds. PGlite: the claims run one
  // after another (one connection), so the second sees the first's committed claim.
  // Either way no row is claimed twice; the overlap itself is tested in pg-database.test.ts.
  it("concurrent claimers with FOR UPDATE SKIP LOCKED claim disjoint rows, each row once", async ({ db }) => {
    await db.exec("CREATE TABLE jobs (id int PRIMARY KEY, claimed_by int)");
    await db.query("INSERT INTO jobs SELECT g, NULL FROM generate_series(1, 10) AS g");
    const claimers = [1, 2, 3, 4];
    const claimed = await Promise.all(
      claimers.map((worker) =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ id: number }>(
            "SELECT id FROM jobs WHERE claimed_by IS NULL ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED",
          );
          const ids = rows.map((r) => r.id);
          await tx.query("UPDATE jobs SET claimed_by = $1 WHERE id = ANY($2::int[])", [worker, ids]);
          return ids;
        }),
      ),
    );
    const all = claimed.flat();
    assert.equal(new Set(all).size, all.length, `a row was claimed twice: ${JSON.stringify(claimed)}`);
    const { rows } = await db.query<{ c: bigint }>(
      "SELECT count(*) AS c FROM jobs WHERE claimed_by IS NOT NULL",
    );
    assert.equal(rows[0]!.c, BigInt(all.length));
  });

  it("concurrent read-modify-write under SELECT … FOR UPDATE loses no update", async ({ db }) => {
    await db.exec(
      "CREATE TABLE counters (id int PRIMARY KEY, n int8 NOT NULL); INSERT INTO counters VALUES (1, 0);",
    );
    const writers = 12;
    await Promise.all(
      Array.from({ length: writers }, () =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: bigint }>("SELECT n FROM counters WHERE id = 1 FOR UPDATE");
          await tx.query("UPDATE counters SET n = $1 WHERE id = 1", [rows[0]!.n + 1n]);
        }),
      ),
    );
    assert.equal((await db.query<{ n: bigint }>("SELECT n FROM counters")).rows[0]!.n, BigInt(writers));
  });

  it("a transaction-scoped advisory lock is held until COMMIT and free after", async ({ db }) => {
    const key = 0x5ca1ab1en;
    const inside = await db.transaction(async (tx) => {
      const first = await tx.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1::int8) AS ok", [
        key,
      ]);
      const held = await tx.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
      );
      return { ok: first.rows[0]!.ok, held: held.rows[0]!.n };
    });
    assert.deepEqual(inside, { ok: true, held: 1n });
    const after = await db.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
    );
    assert.equal(after.rows[0]!.n, 0n);
  });

  it("ping answers within its deadline", async ({ db }) => {
    await db.ping(5_000);
  });

  it("a named query is a prepared statement on pg (parsed once per connection), the same rows on PGlite", async ({
    db,
  }) => {
    const text = "SELECT $1::int8 + 1 AS next, $2::text[] AS tags";
    const named = { name: "contract_next" };
    const [first, second, plain] = await db.transaction(async (tx) => [
      await tx.query<{ next: bigint; tags: string[] }>(text, [1n, ["a"]], named),
      await tx.query<{ next: bigint; tags: string[] }>(text, [41n, []], named),
      await tx.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM pg_prepared_statements WHERE name = 'contract_next' AND NOT from_sql",
      ),
    ]);
    assert.deepEqual(first.rows, [{ next: 2n, tags: ["a"] }]);
    assert.deepEqual(second.rows, [{ next: 42n, tags: [] }]);
    // pg keeps it in the session under its name; PGlite's API has none, so it ran unnamed.
    assert.equal(plain.rows[0]!.n, db.engine === "postgres" ? 1n : 0n);
    const bad = await rejection(db.query("SELECT 1", [], { name: "Not A Name" }));
    assert.ok(sqlErrors.is(bad, "SQL_NAME_INVALID"));
    assert.equal(bad.fields.name, "Not A Name");
  });
});
