/**
 * Jepsen's bank test on the group-committed ledger, on real PostgreSQL: N accounts funded once,
 * then only transfers among themselves — from two pools (two "processes"), through group
 * commit, some refused for lack of funds (no-overdraft accounts) — while a reader takes
 * snapshots (REPEATABLE READ: one snapshot per read) of every balance. In every read the total
 * is what was funded, no no-overdraft account is below zero, and every balance equals the sum
 * of its entries in that same snapshot: no read ever sees half a group.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Database } from "@casebook/infra/sql/sql";
import { requirePostgres } from "@casebook/lab/test-engines";
import { ledgerErrors } from "../src/errors.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { openPool, openPostgresLedger } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";
import type { TestSchema } from "./sql-backends.ts";

const ACCOUNTS = 8;
const FUNDED_MINOR = 1_000n;
const WRITERS_PER_POOL = 12;
const TRANSFERS_PER_WRITER = 60;
/** Reads happen until the writers finish; at least this many must have been taken. */
const MIN_READS = 10;

interface Snapshot {
  balances: { account_id: bigint; no_overdraft: boolean; posted: bigint; pd: bigint }[];
  entries: Map<bigint, bigint>;
}

describe("ledger bank check [postgresql]", () => {
  let url: string | undefined;
  let subject: TestSchema | undefined;
  const pools: Database[] = [];

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (!url) return;
    subject = await openPostgresLedger(url, 2);
    for (let i = 0; i < 2; i++) pools.push(await openPool(url, subject.schema, 3));
  });
  after(async () => {
    for (const pool of pools) await pool.close();
    await subject?.drop();
  });

  test("bank: concurrent group-committed transfers among N accounts; every snapshot read keeps the total", async (t) => {
    if (!(await requirePostgres(t)) || !subject) return;
    const setup = new LedgerRepository(subject.db);
    const source = await setup.createAccount({ currency: "USD" });
    const ids: bigint[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const account = await setup.createAccount({ currency: "USD", noOverdraft: i % 2 === 0 });
      await setup.transfer({
        idemKey: `bank-fund-${i}`,
        from: source.id,
        to: account.id,
        amount: FUNDED_MINOR,
        currency: "USD",
      });
      ids.push(account.id);
    }
    const total = FUNDED_MINOR * BigInt(ACCOUNTS);

    let writing = true;
    let refused = 0;
    const writers = pools.flatMap((pool, p) => {
      const ledger = new LedgerRepository(pool, { groupCommit: { maxWaitMs: 2 } });
      return Array.from({ length: WRITERS_PER_POOL }, async (_, w) => {
        for (let n = 0; n < TRANSFERS_PER_WRITER; n++) {
          const from = ids[Math.floor(Math.random() * ACCOUNTS)]!;
          let to = ids[Math.floor(Math.random() * ACCOUNTS)]!;
          if (to === from) to = ids[(ids.indexOf(from) + 1) % ACCOUNTS]!;
          const amount = BigInt(1 + Math.floor(Math.random() * 400));
          const idemKey = `bank-${p}-${w}-${n}`;
          try {
            await ledger.transfer({ idemKey, from, to, amount, currency: "USD" });
          } catch (error) {
            if (!ledgerErrors.is(error, "LEDGER_INSUFFICIENT_FUNDS")) throw error;
            refused += 1;
          }
        }
      });
    });
    const done = Promise.all(writers).finally(() => {
      writing = false;
    });

    let reads = 0;
    const idText = ids.map(String);
    while (writing || reads < MIN_READS) {
      const snapshot: Snapshot = await subject.db.transaction(
        async (tx) => {
          const balances = await tx.query<{
            account_id: bigint;
            no_overdraft: boolean;
            posted: bigint;
            pd: bigint;
          }>(
            `SELECT account_id, no_overdraft, (posted_credits - posted_debits)::int8 AS posted, pending_debits AS pd
               FROM account_balances WHERE account_id = ANY($1::int8[])`,
            [idText],
          );
          const entries = await tx.query<{ account_id: bigint; net: bigint }>(
            `SELECT account_id, sum(CASE direction WHEN 'C' THEN amount ELSE -amount END)::int8 AS net
               FROM entries WHERE account_id = ANY($1::int8[]) GROUP BY account_id`,
            [idText],
          );
          return {
            balances: balances.rows,
            entries: new Map(entries.rows.map((r) => [r.account_id, r.net])),
          };
        },
        { isolation: "repeatable read" },
      );
      reads += 1;
      const sum = snapshot.balances.reduce((acc, row) => acc + row.posted, 0n);
      assert.equal(sum, total, `read ${reads}: the total is ${sum}, not ${total}`);
      for (const row of snapshot.balances) {
        if (row.no_overdraft)
          assert.ok(row.posted - row.pd >= 0n, `read ${reads}: ${row.account_id} below zero`);
        assert.equal(
          row.posted,
          snapshot.entries.get(row.account_id),
          `read ${reads}: ${row.account_id} ≠ its entries`,
        );
      }
    }
    await done;
    t.diagnostic(`${reads} snapshot reads, ${refused} transfers refused for funds`);
    await checkLedgerInvariants(subject.db);
  });
});
