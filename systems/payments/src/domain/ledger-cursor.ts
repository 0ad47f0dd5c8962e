/**
 * Keyset pagination cursors for an account's entries and transactions: the last id seen,
 * wrapped so callers treat it as opaque (and we may change what is inside). Keyset, not
 * OFFSET: a page costs the same on page 1 and page 10 000, and rows inserted meanwhile
 * never shift a page.
 *
 * @example
 * const cursor = encodeCursor(1234n); // "djE6MTIzNA"
 * decodeCursor(cursor);               // 1234n
 */
import { ledgerErrors } from "../errors.ts";

const PREFIX = "v1:";
const ID_PATTERN = /^[1-9][0-9]{0,18}$/;

export function encodeCursor(lastId: bigint): string {
  return Buffer.from(`${PREFIX}${lastId}`).toString("base64url");
}

/** The id a cursor carries; LEDGER_CURSOR_INVALID when it is not one we made. */
export function decodeCursor(cursor: string): bigint {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const id = text.startsWith(PREFIX) ? text.slice(PREFIX.length) : "";
  if (!ID_PATTERN.test(id)) throw ledgerErrors.create("LEDGER_CURSOR_INVALID", { fields: { cursor } });
  return BigInt(id);
}
