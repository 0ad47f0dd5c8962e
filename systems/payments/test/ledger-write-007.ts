/**
 * Books a pending hold through the `ledger_write` of a schema before 018 (007's ten arrays, one
 * row per entry back), for the upgrade tests that write "what the previous version wrote" on an
 * old data directory: today's `applyTransfers` calls 018's eleven-argument function, which such a
 * schema does not have.
 *
 * @example
 * const holdId = await bookHoldWith007(tx, normalizeTransfer({ idemKey, from, to, amount: 5_000n, currency: "EUR", pending: true }));
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { Transfer } from "../src/domain/ledger.ts";

/** The transfer's ledger transaction id (its entries as given; pending when the transfer is). */
export async function bookHoldWith007(tx: Queryable, transfer: Transfer): Promise<bigint> {
  const { entries } = transfer;
  const { rows } = await tx.query<{ transaction_id: bigint }>(
    `SELECT DISTINCT transaction_id
       FROM ledger_write($1::text[], $2::text[], $3::boolean[], $4::int8[], $5::jsonb[],
                         $6::int4[], $7::int8[], $8::text[], $9::text[], $10::int8[])`,
    [
      [transfer.idemKey],
      [transfer.fingerprint],
      [transfer.pending],
      [null],
      [JSON.stringify(transfer.metadata)],
      entries.map(() => 1),
      entries.map((e) => String(e.accountId)),
      entries.map((e) => e.currency),
      entries.map((e) => e.direction),
      entries.map((e) => String(e.amount)),
    ],
  );
  return rows[0]!.transaction_id;
}
