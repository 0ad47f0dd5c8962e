/**
 * What only a server with many connections can show: transactions that overlap.
 * Each test holds one transaction open at a known point (a latch) while another
 * runs, instead of sleeping and hoping they overlap.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { type FaultProxy, startFaultProxy } from "@casebook/lab/fault-proxy";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { isConnectionLoss, openPgDatabase } from "../../src/sql/pg-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";
import { ensureSchema, quoteIdentifier } from "../../src/sql/sql-schema.ts";
import {
  isDeadlock,
  isRetryableTransactionError,
  isSerializationFailure,
  SqlState,
  sqlState,
} from "../../src/sql/sql-state.ts";

/** A one-shot signal between two concurrent transactions. */
function latch(): { open(): void; opened: Promise<void> } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { open: () => resolve(), opened: promise };
}

async function settle<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A pool whose every connection goes through a fault proxy in front of the server. */
async function throughFaultProxy(
  url: string,
  settings: { connectTimeoutMs?: number; statementTimeoutMs?: number } = {},
): Promise<{ proxy: FaultProxy; db: Database }> {
  const proxy = await startFaultProxy({ upstream: new URL(url).host });
  const db = openPgDatabase({ url: proxy.rewrite(url), applicationName: "casebook-sql-test", ...settings });
  return { proxy, db };
}

/** The link healed, the pool serves again from fresh connections: a query and a transaction. */
async function servesAfterHealing(db: Database, proxy: FaultProxy): Promise<void> {
  await proxy.heal();
  assert.equal((await db.query("SELECT 1 AS ok")).rows[0]?.ok, 1, "a fresh connection serves");
  assert.equal(await db.transaction(async (tx) => (await tx.query("SELECT 2 AS two")).rows[0]?.two), 2);
}

/** A port with nothing listening: bound by us, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("postgresql database", () => {
  let url: string | undefined;
  let db: Database;
  const schema = uniqueName("sqlpg");

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (!url) return;
    db = openPgDatabase({
      url,
      schema,
      applicationName: "casebook-sql-test",
      maxConnections: 4,
      statementTimeoutMs: 5_000,
    });
    await ensureSchema(db, schema);
  });

  after(async () => {
    if (!url) return;
    await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await db.close();
  });

  test("every session carries the pool's explicit settings", async (t) => {
    if (!(await requirePostgres(t))) return;
    const { rows } = await db.query(
      `SELECT current_setting('statement_timeout') AS statement_timeout,
              current_setting('idle_in_transaction_session_timeout') AS idle_in_tx,
              current_setting('application_name') AS application_name,
              current_setting('TimeZone') AS zone,
              current_setting('search_path') AS search_path`,
    );
    assert.deepEqual(rows[0], {
      statement_timeout: "5s",
      idle_in_tx: "1min",
      application_name: "casebook-sql-test",
      zone: "UTC",
      search_path: `"${schema}"`,
    });
  });

  test("preparedStatements: a parameterized text is prepared once per connection under its derived name; `*` and past the limit run unnamed", async (t) => {
    if (!(await requirePostgres(t))) return;
    const prepared = openPgDatabase({
      url: url!,
      schema,
      applicationName: "casebook-sql-test",
      maxConnections: 1,
      preparedStatements: 3,
    });
    try {
      await prepared.exec("CREATE TABLE prep_items (id int PRIMARY KEY, label text NOT NULL)");
      const insert = "INSERT INTO prep_items (id, label) VALUES ($1, $2) RETURNING id, label";
      const star = "SELECT * FROM prep_items WHERE id = $1";
      const read = "SELECT label FROM prep_items WHERE id = $1";
      const late = "SELECT id FROM prep_items WHERE label = $1";
      assert.deepEqual((await prepared.query(insert, [1, "one"])).rows, [{ id: 1, label: "one" }]);
      assert.deepEqual((await prepared.query(insert, [2, "two"])).rows, [{ id: 2, label: "two" }]);
      await prepared.query(star, [1]);
      await prepared.query(read, [1]);
      await prepared.query(late, ["one"]); // the fourth text (the `*` one counts): past the limit of 3
      const inSession = await prepared.query<{ statement: string }>(
        "SELECT statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY statement",
      );
      assert.deepEqual(
        inSession.rows.map((r) => r.statement),
        [insert, read],
      );
      // A column added while the connection lives: the named text is re-planned, the `*` one
      // (unnamed) returns the new column instead of failing "cached plan must not change result type".
      await prepared.exec("ALTER TABLE prep_items ADD COLUMN note text");
      assert.deepEqual((await prepared.query(read, [2])).rows, [{ label: "two" }]);
      assert.deepEqual((await prepared.query(star, [2])).rows, [{ id: 2, label: "two", note: null }]);
      assert.deepEqual((await prepared.query(insert, [3, "three"])).rows, [{ id: 3, label: "three" }]);
    } finally {
      await prepared.close();
    }
  });

  test("SKIP LOCKED: a claimer skips the rows another open transaction holds", async (t) => {
    if (!(await requirePostgres(t))) return;
    await db.exec(
      "CREATE TABLE skip_jobs (id int PRIMARY KEY); INSERT INTO skip_jobs SELECT generate_series(1, 4);",
    );
    const claim = "SELECT id FROM skip_jobs ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED";
    const firstHolds = latch();
    const secondDone = latch();
    const first = db.transaction(async (tx) => {
      const ids = (await tx.query<{ id: number }>(claim)).rows.map((r) => r.id);
      firstHolds.open();
      await secondDone.opened; // keep the row locks until the second claimer has run
      return ids;
    });
    await firstHolds.opened;
    const second = await db.transaction(async (tx) =>
      (await tx.query<{ id: number }>(claim)).rows.map((r) => r.id),
    );
    secondDone.open();
    assert.deepEqual(
      [await first, second],
      [
        [1, 2],
        [3, 4],
      ],
    );
  });

  test("an advisory transaction lock excludes other sessions until COMMIT", async (t) => {
    if (!(await requirePostgres(t))) return;
    const key = 0xcafe_f00dn;
    const tryLock = "SELECT pg_try_advisory_xact_lock($1::int8) AS ok";
    const held = latch();
    const checked = latch();
    const holder = db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1::int8)", [key]);
      held.open();
      await checked.opened;
    });
    await held.opened;
    const whileHeld = await db.transaction(
      async (tx) => (await tx.query<{ ok: boolean }>(tryLock, [key])).rows[0]!.ok,
    );
    checked.open();
    await holder;
    const afterCommit = await db.transaction(
      async (tx) => (await tx.query<{ ok: boolean }>(tryLock, [key])).rows[0]!.ok,
    );
    assert.deepEqual([whileHeld, afterCommit], [false, true]);
  });

  test("SERIALIZABLE write skew: one of two overlapping transactions fails with 40001", async (t) => {
    if (!(await requirePostgres(t))) return;
    await db.exec(
      "CREATE TABLE on_call (doctor text PRIMARY KEY, on_duty bool NOT NULL); INSERT INTO on_call VALUES ('a', true), ('b', true);",
    );
    const bothRead = [latch(), latch()];
    const leave = (doctor: string, mine: number) =>
      db.transaction(
        async (tx) => {
          const { rows } = await tx.query<{ n: bigint }>("SELECT count(*) AS n FROM on_call WHERE on_duty");
          bothRead[mine]!.open();
          await bothRead[1 - mine]!.opened; // both have read "2 on duty" before either writes
          if (rows[0]!.n >= 2n)
            await tx.query("UPDATE on_call SET on_duty = false WHERE doctor = $1", [doctor]);
        },
        { isolation: "serializable" },
      );
    const outcomes = await Promise.all([settle(leave("a", 0)), settle(leave("b", 1))]);
    const failures = outcomes.flatMap((o) => (o.ok ? [] : [o.error]));
    assert.equal(failures.length, 1, "exactly one transaction must lose");
    assert.ok(isSerializationFailure(failures[0]));
    assert.ok(isRetryableTransactionError(failures[0]));
    const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM on_call WHERE on_duty");
    assert.equal(rows[0]!.n, 1n, "the invariant 'someone is on duty' held");
  });

  test("a lock cycle is broken with 40P01 in one transaction; the other commits", async (t) => {
    if (!(await requirePostgres(t))) return;
    await db.exec(
      "CREATE TABLE cycle (id int PRIMARY KEY, n int NOT NULL); INSERT INTO cycle VALUES (1, 0), (2, 0);",
    );
    const locked = [latch(), latch()];
    const crossWise = (mine: number) =>
      db.transaction(async (tx) => {
        await tx.query("UPDATE cycle SET n = n + 1 WHERE id = $1", [mine + 1]);
        locked[mine]!.open();
        await locked[1 - mine]!.opened;
        await tx.query("UPDATE cycle SET n = n + 1 WHERE id = $1", [2 - mine]);
      });
    const outcomes = await Promise.all([settle(crossWise(0)), settle(crossWise(1))]);
    const failures = outcomes.flatMap((o) => (o.ok ? [] : [o.error]));
    assert.equal(failures.length, 1);
    assert.ok(isDeadlock(failures[0]));
    assert.ok(isRetryableTransactionError(failures[0]));
    const { rows } = await db.query<{ total: bigint }>("SELECT sum(n)::int8 AS total FROM cycle");
    assert.equal(rows[0]!.total, 2n, "the survivor's two updates, none of the victim's");
  });

  test("a full pool makes the next caller wait at most connectTimeoutMs, then SQL_UNAVAILABLE", async (t) => {
    if (!url || !(await requirePostgres(t))) return;
    // 1 s, and the one connection made before the holder takes it: a fresh PostgreSQL backend
    // took over 200 ms to start in a clean-clone CI run on a loaded machine, so the holder's own
    // connect timed out and the test never reached the full pool it is about.
    const small = openPgDatabase({
      url,
      applicationName: "casebook-sql-test",
      maxConnections: 1,
      connectTimeoutMs: 1_000,
    });
    const holding = latch();
    const release = latch();
    try {
      await small.query("SELECT 1");
      const holder = small.transaction(async () => {
        holding.open();
        await release.opened;
      });
      await holding.opened;
      await assert.rejects(small.query("SELECT 1"), (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"));
      release.open();
      await holder;
      assert.equal((await small.query("SELECT 1 AS ok")).rows[0]?.ok, 1, "the pool recovers");
    } finally {
      release.open();
      await small.close();
    }
  });
});

test("an unreachable server surfaces as SQL_UNAVAILABLE from query, transaction and ping", async () => {
  const port = await closedPort();
  const db = openPgDatabase({
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    applicationName: "casebook-sql-test",
    connectTimeoutMs: 500,
  });
  try {
    for (const attempt of [db.query("SELECT 1"), db.transaction(async () => 1), db.ping(1_000)]) {
      await assert.rejects(attempt, (err) => {
        assert.ok(sqlErrors.is(err, "SQL_UNAVAILABLE"));
        assert.ok(isConnectionLoss(err.cause), "the driver's error is kept as cause");
        return true;
      });
    }
  } finally {
    await db.close();
  }
});

test("a link reset inside a transaction: the caller gets SQL_UNAVAILABLE, the process lives on, the pool recovers", async (t) => {
  const url = await requirePostgres(t);
  if (url === undefined) return;
  const { proxy, db } = await throughFaultProxy(url, { connectTimeoutMs: 1_000, statementTimeoutMs: 1_000 });
  try {
    const started = performance.now();
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("SELECT 1");
        proxy.cutAll(); // the link dies between two statements of the transaction
        await new Promise((resolve) => setTimeout(resolve, 100));
        await tx.query("SELECT 1");
      }),
      (err) => sqlErrors.is(err, "SQL_UNAVAILABLE") && err.fields.commitOutcome === undefined,
      "lost before COMMIT: the outcome is known (rolled back), so not flagged",
    );
    assert.ok(
      performance.now() - started < 4_000,
      "no ROLLBACK waits on the dead link: the client is destroyed",
    );
    await servesAfterHealing(db, proxy);
  } finally {
    await db.close();
    await proxy.close();
  }
});

test("a statement the server cancels at statement_timeout is SQL_UNAVAILABLE (a 503 to retry), and the pool keeps the connection", async (t) => {
  const url = await requirePostgres(t);
  if (url === undefined) return;
  // Every statement of the pool runs under this bound, the final SELECT 1 too: wide enough for a
  // loaded machine, far below the sleeps it must cancel.
  const db = openPgDatabase({ url, applicationName: "casebook-sql-test", statementTimeoutMs: 500 });
  const cancelled = (err: unknown) => {
    assert.ok(sqlErrors.is(err, "SQL_UNAVAILABLE"));
    assert.equal(sqlState(err.cause), SqlState.queryCanceled, "the engine's error is kept as cause");
    return true;
  };
  try {
    // Both run at once, each awaited by its own assertion: whichever the server cancels first is
    // already being watched (a rejection nobody awaits yet would fail the test on its own).
    await Promise.all([
      assert.rejects(db.query("SELECT pg_sleep(10)"), cancelled),
      assert.rejects(
        db.transaction(async (tx) => tx.query("SELECT pg_sleep(10)")),
        cancelled,
      ),
    ]);
    assert.equal((await db.query("SELECT 1 AS ok")).rows[0]?.ok, 1);
  } finally {
    await db.close();
  }
});

test("a link lost with the COMMIT on its way is SQL_UNAVAILABLE with commitOutcome unknown", async (t) => {
  const url = await requirePostgres(t);
  if (url === undefined) return;
  const { proxy, db } = await throughFaultProxy(url);
  try {
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("SELECT 1");
        // The COMMIT leaves into a blackhole, then the link is reset before any answer.
        proxy.blackhole(true, "discard");
        setTimeout(() => proxy.cutAll(), 100);
      }),
      (err) => sqlErrors.is(err, "SQL_UNAVAILABLE") && err.fields.commitOutcome === "unknown",
    );
  } finally {
    await db.close();
    await proxy.close();
  }
});

test("a link gone silent: every statement gives up at statement_timeout + 5 s as SQL_UNAVAILABLE, the silent connections are dropped, the pool recovers", async (t) => {
  const url = await requirePostgres(t);
  if (url === undefined) return;
  const { proxy, db } = await throughFaultProxy(url, { connectTimeoutMs: 2_000, statementTimeoutMs: 300 });
  try {
    await db.query("SELECT 1");
    await db.transaction(async (tx) => tx.query("SELECT 1"));
    // Nothing reaches the server any more, so its statement_timeout never fires: the client's
    // backstop (statement_timeout + 5 s) is what answers, for a query and inside a transaction.
    proxy.blackhole(true, "discard");
    const started = performance.now();
    const silent = (err: unknown) => {
      assert.ok(sqlErrors.is(err, "SQL_UNAVAILABLE"), String(err));
      assert.match(String((err.cause as Error | undefined)?.message), /Query read timeout/);
      return true;
    };
    await Promise.all([
      assert.rejects(db.query("SELECT 2"), silent),
      assert.rejects(
        db.transaction(async (tx) => tx.query("SELECT 3")),
        (err) => sqlErrors.is(err, "SQL_UNAVAILABLE"),
      ),
    ]);
    const waitedMs = performance.now() - started;
    assert.ok(waitedMs >= 5_000, `gave up after ${Math.round(waitedMs)} ms, before the backstop`);
    assert.ok(waitedMs < 15_000, `gave up after ${Math.round(waitedMs)} ms`);
    await servesAfterHealing(db, proxy);
  } finally {
    await db.close();
    await proxy.close();
  }
});

test("no statement's callback is born in the old generation (pg's own, with query_timeout, is)", async (t) => {
  const url = await requirePostgres(t);
  if (url === undefined) return;
  // V8's own answer, from a child with natives syntax: each Query's callback checked as pg
  // submits it, over queries and transactions through this module, and through a bare pool
  // with pg's query_timeout for contrast.
  const moduleUrl = new URL("../../src/sql/pg-database.ts", import.meta.url).href;
  const script = `
    import pg from "pg";
    const { openPgDatabase } = await import(${JSON.stringify(moduleUrl)});
    let seen = 0, old = 0;
    const submit = pg.Query.prototype.submit;
    pg.Query.prototype.submit = function (connection) {
      seen++;
      if (!%InYoungGeneration(this.callback)) old++;
      return submit.call(this, connection);
    };
    const count = async (work) => { seen = 0; old = 0; await work(); return { seen, old }; };
    const db = openPgDatabase({ url: process.env.PG_URL, applicationName: "casebook-sql-test" });
    const ours = await count(async () => {
      for (let i = 0; i < 300; i++) await db.query("SELECT $1::int AS n", [i]);
      for (let i = 0; i < 50; i++) await db.transaction(async (tx) => tx.query("SELECT $1::int AS n", [i]));
    });
    await db.close();
    const bare = new pg.Pool({ connectionString: process.env.PG_URL, query_timeout: 30000 });
    const pgOwn = await count(async () => {
      for (let i = 0; i < 300; i++) await bare.query({ text: "SELECT $1::int AS n", values: [i] });
    });
    await bare.end();
    console.log(JSON.stringify({ ours, pgOwn }));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--allow-natives-syntax", "--input-type=module", "-e", script],
    { cwd: new URL("../..", import.meta.url), env: { ...process.env, PG_URL: url } },
  );
  const { ours, pgOwn } = JSON.parse(stdout) as Record<"ours" | "pgOwn", { seen: number; old: number }>;
  assert.equal(ours.seen, 300 + 50 * 3, "every statement seen (a transaction: BEGIN, the query, COMMIT)");
  assert.equal(ours.old, 0, `${ours.old} of ${ours.seen} statements' callbacks born old`);
  assert.ok(
    pgOwn.old > 250,
    `pg's own callbacks with query_timeout: ${pgOwn.old} of 300 old (the effect avoided)`,
  );
});
