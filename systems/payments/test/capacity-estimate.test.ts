/**
 * PY-19: the text's estimates, reproduced — and the bytes per entry measured on real
 * PostgreSQL (heap + indexes of `entries` after 20,000 two-entry transfers) instead of
 * assumed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { requirePostgres } from "@casebook/lab/test-engines";
import { estimateCapacity } from "../src/domain/capacity-estimate.ts";
import { openPostgresLedger } from "./ledger-backends.ts";

test("PY-19 1,000 payments/s = 86.4 M/day; 8 transitions per saga = 8,000/s", () => {
  const e = estimateCapacity({
    paymentsPerS: 1_000,
    transitionsPerSaga: 8,
    bytesPerEntry: 100,
    entries: 1e9,
  });
  assert.equal(e.paymentsPerDay, 86_400_000);
  assert.equal(e.transitionsPerS, 8_000);
  assert.throws(
    () => estimateCapacity({ paymentsPerS: 0, transitionsPerSaga: 8, bytesPerEntry: 1, entries: 1 }),
    /paymentsPerS/,
  );
});

test("PY-19 an entry measured on PostgreSQL is tens to hundreds of bytes: a billion fit in hundreds of GB", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema, drop } = await openPostgresLedger(url);
  try {
    const [from, to] = await Promise.all([
      db.query<{ id: bigint }>("INSERT INTO accounts (currency) VALUES ('USD') RETURNING id"),
      db.query<{ id: bigint }>("INSERT INTO accounts (currency) VALUES ('USD') RETURNING id"),
    ]);
    const transfers = 10_000;
    // Bulk-load through SQL (balances are irrelevant to the size of an entry row).
    await db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO transactions (idem_key, fingerprint, status)
         SELECT 'bulk-' || g, md5(g::text), 'posted' FROM generate_series(1, $1::int) g`,
        [transfers],
      );
      await tx.query(
        `INSERT INTO entries (transaction_id, account_id, currency, direction, amount)
         SELECT t.id, CASE d WHEN 'D' THEN $1::int8 ELSE $2::int8 END, 'USD', d, 100 + (t.id % 1000)
         FROM transactions t CROSS JOIN (VALUES ('D'), ('C')) v(d) WHERE t.idem_key LIKE 'bulk-%'`,
        [from.rows[0]!.id, to.rows[0]!.id],
      );
    });
    await db.exec("ANALYZE entries");
    const size = await db.query<{ bytes: bigint }>(
      `SELECT pg_total_relation_size(format('%I.entries', $1::text)::regclass)::int8 AS bytes`,
      [schema],
    );
    const bytesPerEntry = Number(size.rows[0]!.bytes) / (2 * transfers);
    const e = estimateCapacity({ paymentsPerS: 1_000, transitionsPerSaga: 8, bytesPerEntry, entries: 1e9 });
    t.diagnostic(
      `entries: ${bytesPerEntry.toFixed(0)} B each (row + 3 indexes); 1e9 entries ≈ ${e.entriesStorageGb.toFixed(0)} GB`,
    );
    assert.ok(bytesPerEntry >= 10 && bytesPerEntry < 1_000, `${bytesPerEntry} B: tens to hundreds of bytes`);
    assert.ok(
      e.entriesStorageGb >= 10 && e.entriesStorageGb < 1_000,
      `${e.entriesStorageGb} GB: hundreds of GB`,
    );
  } finally {
    await drop();
  }
});
