/**
 * PY-08 through psql, the way a person with a SQL prompt would try it: statements one at a
 * time, no repository in between. 015 checks a ledger transaction's balance once (on its
 * transaction row, at COMMIT) instead of once per entry; these prove nothing slipped through
 * the change: an unbalanced set of separate INSERTs is refused at COMMIT, entries cannot be
 * appended to a transaction an earlier database transaction created (no check would fire for
 * them), nor to a pending one being posted, and a balanced insert still commits — in a
 * savepoint too.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { requirePostgres } from "@casebook/lab/test-engines";
import { openPostgresLedger } from "./ledger-backends.ts";
import type { TestSchema } from "./sql-backends.ts";

/** Bound on one psql run; generous, the machine is shared. */
const psqlTimeoutMs = 60_000;

function hasPsql(): boolean {
  return spawnSync("psql", ["--version"], { encoding: "utf8" }).status === 0;
}

describe("ledger schema through psql [postgresql]", () => {
  let url: string | undefined;
  let subject: TestSchema | undefined;

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (url) subject = await openPostgresLedger(url, 2);
  });
  after(async () => {
    await subject?.drop();
  });

  /** Runs `script` in one psql session on the test schema; ON_ERROR_STOP so the first error ends it. */
  function psql(script: string): { ok: boolean; stderr: string; stdout: string } {
    const run = spawnSync("psql", [url!, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", script], {
      encoding: "utf8",
      timeout: psqlTimeoutMs,
      env: { ...process.env, PGOPTIONS: `-c search_path=${subject!.schema}` },
    });
    return { ok: run.status === 0, stderr: run.stderr, stdout: run.stdout.trim() };
  }

  async function accounts(): Promise<[bigint, bigint]> {
    const { rows } = await subject!.db.query<{ id: bigint }>(
      `WITH a AS (INSERT INTO accounts (currency) VALUES ('USD'), ('USD') RETURNING id),
            b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, false FROM a)
       SELECT id FROM a ORDER BY id`,
    );
    return [rows[0]!.id, rows[1]!.id];
  }

  async function keyCount(key: string): Promise<number> {
    const { rows } = await subject!.db.query("SELECT 1 FROM transactions WHERE idem_key = $1", [key]);
    return rows.length;
  }

  function transaction(key: string, status = "posted"): string {
    return `INSERT INTO transactions (idem_key, fingerprint, status) VALUES ('${key}', 'psql', '${status}');`;
  }

  function entry(
    account: bigint,
    direction: "D" | "C",
    amount: number,
    of = "currval(pg_get_serial_sequence('transactions', 'id'))",
  ): string {
    return `INSERT INTO entries (transaction_id, account_id, currency, direction, amount) VALUES (${of}, ${account}, 'USD', '${direction}', ${amount});`;
  }

  test("PY-08 an unbalanced insert made of separate psql statements is refused at COMMIT; nothing stays", async (t) => {
    if (!(await requirePostgres(t)) || !subject) return;
    if (!hasPsql()) return t.skip("psql is not installed");
    const [a, b] = await accounts();
    const run = psql(
      `BEGIN; ${transaction("psql-bad")} ${entry(a, "D", 5000)} ${entry(b, "C", 4900)} COMMIT;`,
    );
    assert.equal(run.ok, false, "COMMIT refused");
    assert.match(run.stderr, /transaction \d+ unbalanced: difference of 100 cents/);
    assert.equal(await keyCount("psql-bad"), 0);
  });

  test("PY-08 the same statements balanced commit, in a savepoint too; one entry alone or none is refused", async (t) => {
    if (!(await requirePostgres(t)) || !subject) return;
    if (!hasPsql()) return t.skip("psql is not installed");
    const [a, b] = await accounts();
    const balanced = psql(
      `BEGIN; ${transaction("psql-ok")} ${entry(a, "D", 5000)} ${entry(b, "C", 5000)} COMMIT;`,
    );
    assert.equal(balanced.ok, true, balanced.stderr);
    const saved = psql(
      `BEGIN; SAVEPOINT s; ${transaction("psql-sp")} ${entry(a, "D", 7)} RELEASE SAVEPOINT s; ${entry(b, "C", 7)} COMMIT;`,
    );
    assert.equal(saved.ok, true, saved.stderr);
    assert.equal(await keyCount("psql-ok"), 1);
    assert.equal(await keyCount("psql-sp"), 1);
    const lone = psql(`BEGIN; ${transaction("psql-lone")} ${entry(a, "D", 5000)} COMMIT;`);
    assert.match(lone.stderr, /transaction \d+ unbalanced: difference of 5000 cents/);
    // Autocommit: the transaction row alone is its own database transaction.
    const empty = psql(transaction("psql-empty"));
    assert.match(empty.stderr, /transaction \d+ has 0 entry: double entry needs at least 2/);
    assert.equal(await keyCount("psql-lone"), 0);
    assert.equal(await keyCount("psql-empty"), 0);
  });

  test("PY-08 an entry appended to a committed transaction is refused: it would escape the check at COMMIT", async (t) => {
    if (!(await requirePostgres(t)) || !subject) return;
    if (!hasPsql()) return t.skip("psql is not installed");
    const [a, b] = await accounts();
    assert.equal(
      psql(`BEGIN; ${transaction("psql-old")} ${entry(a, "D", 10)} ${entry(b, "C", 10)} COMMIT;`).ok,
      true,
    );
    const old = "(SELECT id FROM transactions WHERE idem_key = 'psql-old')";
    const append = psql(entry(a, "D", 1, old));
    assert.equal(append.ok, false);
    assert.match(
      append.stderr,
      /was created by an earlier database transaction: entries cannot be added to it/,
    );
    // A pending hold being posted in the same database transaction is not "created" by it either.
    assert.equal(
      psql(`BEGIN; ${transaction("psql-hold", "pending")} ${entry(a, "D", 10)} ${entry(b, "C", 10)} COMMIT;`)
        .ok,
      true,
    );
    const hold = "(SELECT id FROM transactions WHERE idem_key = 'psql-hold')";
    const post = psql(
      `BEGIN; UPDATE transactions SET status = 'posted' WHERE id = ${hold}; ${entry(b, "C", 1, hold)} COMMIT;`,
    );
    assert.match(post.stderr, /was created by an earlier database transaction/);
    const forge = psql(
      `UPDATE transactions SET status = 'posted', created_xid = pg_current_xact_id() WHERE id = ${hold};`,
    );
    assert.match(forge.stderr, /only pending -> posted \| voided may change/);
    const { rows } = await subject.db.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM entries e JOIN transactions t ON t.id = e.transaction_id WHERE t.idem_key IN ('psql-old', 'psql-hold')",
    );
    assert.equal(rows[0]!.n, 4n, "each still has its own two entries");
  });
});
