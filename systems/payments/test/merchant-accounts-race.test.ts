/**
 * First use of a merchant's accounts, raced on real PostgreSQL from several pools (PGlite
 * serializes transactions, so only PostgreSQL can show a duplicate): every racer gets the
 * same three accounts and no orphan ledger account is left behind. Also: two replicas
 * bootstrapping one merchant at once create it once.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { requirePostgres } from "@casebook/lab/test-engines";
import { ensureMerchantAccounts } from "../src/store/merchant-accounts.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import { openPostgresPayments, START_MS } from "./merchant-backends.ts";

const POOLS = 4;
const RACERS_PER_POOL = 4;
const CURRENCIES = ["USD", "EUR", "BRL"];

async function withPools(url: string, body: (pools: Database[]) => Promise<void>): Promise<void> {
  const main = await openPostgresPayments(url);
  const pools: Database[] = [main.db];
  try {
    for (let i = 1; i < POOLS; i++) {
      pools.push(
        await openDatabase({ system: "payments", url, schema: main.schema, pool: { maxConnections: 4 } }),
      );
    }
    await body(pools);
  } finally {
    for (const pool of pools.slice(1)) await pool.close();
    await main.drop();
  }
}

test("first use raced from 4 pools x 4 transactions creates ONE set of accounts per currency", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  await withPools(url, async (pools) => {
    const merchants = new MerchantRepository(pools[0]!, { clock: new ManualClock(START_MS), randomBytes });
    const { merchant } = await merchants.create({ id: "race", name: "Race" });
    const results = await Promise.all(
      CURRENCIES.flatMap((currency) =>
        pools.flatMap((pool) =>
          Array.from({ length: RACERS_PER_POOL }, () =>
            pool.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, currency)),
          ),
        ),
      ),
    );
    const perCurrency = POOLS * RACERS_PER_POOL;
    CURRENCIES.forEach((_, c) => {
      const group = results.slice(c * perCurrency, (c + 1) * perCurrency);
      for (const accounts of group) assert.deepEqual(accounts, group[0]);
    });
    const db = pools[0]!;
    const linked = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM merchant_accounts");
    const ledger = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM accounts");
    assert.equal(linked.rows[0]!.n, BigInt(CURRENCIES.length * 3));
    assert.equal(ledger.rows[0]!.n, BigInt(CURRENCIES.length * 3), "no orphan ledger account");
  });
});

test("two replicas bootstrapping the same merchant at once create it once, with one key", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  await withPools(url, async (pools) => {
    const clock = new ManualClock(START_MS);
    const created = await Promise.all(
      pools.map((pool) =>
        new MerchantRepository(pool, { clock, randomBytes }).createIfAbsent({ id: "demo", name: "d" }),
      ),
    );
    assert.equal(created.filter(Boolean).length, 1);
    const keys = await pools[0]!.query<{ n: bigint }>("SELECT count(*) AS n FROM merchant_api_keys");
    assert.equal(keys.rows[0]!.n, 1n);
  });
});
