/**
 * Races only real PostgreSQL can show (PGlite runs transactions one at a time): several pools,
 * one connection each, hammering the same accounts. PY-09 (no deadlock) and PY-14 (never below
 * zero, exactly floor(balance/amount) debits succeed), then the global invariants.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Database } from "@casebook/infra/sql/sql";
import { isDeadlock } from "@casebook/infra/sql/sql-state";
import { int, seededRandom } from "@casebook/kit/random";
import { requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { ledgerErrors } from "../src/errors.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { openPool, openPostgresLedger } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

/** Eight connections, one per pool, so every transfer truly overlaps with seven others. */
const CONNECTIONS = 8;
const TRANSFERS_PER_CONNECTION = 200;

describe("ledger races [postgresql]", () => {
  let url: string | undefined;
  let opened: Awaited<ReturnType<typeof openPostgresLedger>> | undefined;
  const pools: Database[] = [];

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (!url) return;
    opened = await openPostgresLedger(url);
    for (let i = 0; i < CONNECTIONS; i++) pools.push(await openPool(url, opened.schema, 1));
  });

  after(async () => {
    for (const pool of pools) await pool.close();
    await opened?.drop();
  });

  test("PY-09 crossed transfers A→B and B→A from 8 connections × 200 never deadlock; balances exact", async (t) => {
    if (!(await requirePostgres(t)) || !opened) return;
    const main = new LedgerRepository(opened.db);
    const accounts = await Promise.all([0, 1, 2, 3].map(() => main.createAccount({ currency: "USD" })));
    const ids = accounts.map((a) => a.id);
    const expected = new Map(ids.map((id) => [id, 0n]));
    const rng = seededRandom("PY-09");
    // Planned up front (deterministic); half of them go "backwards" (higher id to lower id).
    const plans = pools.map(() =>
      Array.from({ length: TRANSFERS_PER_CONNECTION }, () => {
        const from = ids[int(rng, ids.length)]!;
        let to = ids[int(rng, ids.length)]!;
        if (to === from) to = ids[(ids.indexOf(from) + 1) % ids.length]!;
        return { from, to, amount: BigInt(1 + int(rng, 1_000)) };
      }),
    );
    for (const plan of plans) {
      for (const { from, to, amount } of plan) {
        expected.set(from, expected.get(from)! - amount);
        expected.set(to, expected.get(to)! + amount);
      }
    }
    const prefix = uniqueName("x");
    const deadlocks: unknown[] = [];
    await Promise.all(
      pools.map(async (pool, p) => {
        const ledger = new LedgerRepository(pool);
        for (const [i, step] of plans[p]!.entries()) {
          try {
            await ledger.transfer({ idemKey: `${prefix}-${p}-${i}`, currency: "USD", ...step });
          } catch (err) {
            if (isDeadlock(err)) deadlocks.push(err);
            else throw err;
          }
        }
      }),
    );
    assert.equal(deadlocks.length, 0, "no 40P01");
    for (const id of ids) assert.equal((await main.balance(id)).posted, expected.get(id), `account ${id}`);
    await checkLedgerInvariants(opened.db);
  });

  test("PY-14 concurrent debits on a no-overdraft account: never below zero, exactly floor(balance/amount) succeed", async (t) => {
    if (!(await requirePostgres(t)) || !opened) return;
    const main = new LedgerRepository(opened.db);
    const world = await main.createAccount({ currency: "USD" });
    const wallet = await main.createAccount({ currency: "USD", noOverdraft: true });
    const start = 1_000n;
    const amount = 7n;
    await main.transfer({
      idemKey: uniqueName("fund"),
      from: world.id,
      to: wallet.id,
      amount: start,
      currency: "USD",
    });
    const attemptsPerConnection = 40; // 320 attempts for 142 possible debits
    const prefix = uniqueName("spend");
    let observedMin = start;
    let running = true;
    const watcher = (async () => {
      // Reads the committed balance throughout the race, bounded by the race itself.
      for (let i = 0; running && i < 10_000; i++) {
        const { available } = await main.balance(wallet.id);
        if (available < observedMin) observedMin = available;
      }
    })();
    const outcomes = await Promise.all(
      pools.map(async (pool, p) => {
        const ledger = new LedgerRepository(pool);
        let ok = 0;
        for (let i = 0; i < attemptsPerConnection; i++) {
          try {
            await ledger.transfer({
              idemKey: `${prefix}-${p}-${i}`,
              from: wallet.id,
              to: world.id,
              amount,
              currency: "USD",
            });
            ok += 1;
          } catch (err) {
            if (!ledgerErrors.is(err, "LEDGER_INSUFFICIENT_FUNDS")) throw err;
          }
        }
        return ok;
      }),
    );
    running = false;
    await watcher;
    const succeeded = outcomes.reduce((a, b) => a + b, 0);
    assert.equal(BigInt(succeeded), start / amount, "exactly floor(1000/7) = 142 debits");
    assert.equal((await main.balance(wallet.id)).posted, start % amount);
    assert.ok(observedMin >= 0n, `never below zero (lowest seen ${observedMin})`);
    await checkLedgerInvariants(opened.db);
  });

  test("the same idem_key from 8 connections at once: applied exactly once, the others replay it", async (t) => {
    if (!(await requirePostgres(t)) || !opened) return;
    const main = new LedgerRepository(opened.db);
    const world = await main.createAccount({ currency: "USD" });
    const wallet = await main.createAccount({ currency: "USD" });
    for (let round = 0; round < 20; round++) {
      const request = {
        idemKey: uniqueName("same"),
        from: world.id,
        to: wallet.id,
        amount: 10n,
        currency: "USD",
      };
      const results = await Promise.all(pools.map((pool) => new LedgerRepository(pool).transfer(request)));
      assert.equal(results.filter((r) => !r.replayed).length, 1, `round ${round}: one writer`);
      assert.equal(
        new Set(results.map((r) => r.transaction.id)).size,
        1,
        "every caller got the same transaction",
      );
    }
    assert.equal((await main.balance(wallet.id)).posted, 200n, "20 rounds × 10, never twice");
  });

  test("PY-09 crossed batches and holds (post/void/reverse) interleaved from 8 connections never deadlock", async (t) => {
    if (!(await requirePostgres(t)) || !opened) return;
    const main = new LedgerRepository(opened.db);
    const accounts = await Promise.all([0, 1, 2].map(() => main.createAccount({ currency: "BRL" })));
    const ids = accounts.map((a) => a.id);
    const prefix = uniqueName("mix");
    await Promise.all(
      pools.map(async (pool, p) => {
        const ledger = new LedgerRepository(pool);
        const rng = seededRandom(`mix-${p}`);
        for (let i = 0; i < 25; i++) {
          const pair = () => {
            const from = ids[int(rng, 3)]!;
            return {
              from,
              to: ids[(ids.indexOf(from) + 1 + int(rng, 2)) % 3]!,
              amount: BigInt(1 + int(rng, 50)),
            };
          };
          const batch = Array.from({ length: 5 }, (_, j) => ({
            idemKey: `${prefix}-${p}-${i}-${j}`,
            currency: "BRL",
            ...pair(),
          }));
          const [first] = await ledger.transferBatch(batch);
          const hold = await ledger.transfer({
            idemKey: `${prefix}-${p}-${i}-h`,
            currency: "BRL",
            pending: true,
            ...pair(),
          });
          if (int(rng, 2) === 0) await ledger.post(hold.transaction.id);
          else await ledger.void(hold.transaction.id);
          await ledger.reverse(first!.transaction.id, { idemKey: `${prefix}-${p}-${i}-r` });
        }
      }),
    );
    await checkLedgerInvariants(opened.db);
  });
});
