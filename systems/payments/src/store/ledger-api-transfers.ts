/**
 * Transfers of the ledger API (issue 14) by id, scoped to the merchant: a transfer is the
 * merchant's exactly when its ledger key has the merchant's prefix (`api:<merchant>:`,
 * domain/derived-keys.ts). Another merchant's transfer, a payment's own transaction and an
 * unknown id read alike — the API answers 404, never 403.
 *
 * @example
 * await isApiTransferOf(db, "acme", 42n); // true when acme made transfer 42 through the API
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { apiTransferKeyPrefix } from "../domain/derived-keys.ts";

export async function isApiTransferOf(db: Queryable, merchantId: string, id: bigint): Promise<boolean> {
  const { rows } = await db.query<{ idem_key: string }>("SELECT idem_key FROM transactions WHERE id = $1", [
    id,
  ]);
  return rows[0]?.idem_key.startsWith(apiTransferKeyPrefix(merchantId)) === true;
}
