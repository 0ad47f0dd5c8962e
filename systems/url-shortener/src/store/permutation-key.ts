/**
 * The service's stored keys (`code_keys`, migrations/001_codes.sql): the permutation's key
 * (domain/feistel-permutation.ts) and the visitor hash's key (domain/click-record.ts). The
 * first start inserts a random one (ON CONFLICT DO NOTHING, so replicas starting together
 * agree on the first insert); every start reads the stored one. The permutation's key must
 * never change for a store's life: codes are stored, and another key could map a later
 * number onto an earlier code.
 *
 * @example
 * const key = await loadPermutationKey(db, { randomBytes, nowMs: Date.now() });
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { KEY_BYTES } from "../domain/feistel-permutation.ts";

/** The permutation's key. */
export const LINKS_KEY = "links";
/** The visitor hash's key: 32 random bytes, never shown. */
export const VISITORS_KEY = "visitors";

export interface PermutationKeyContext {
  randomBytes(size: number): Uint8Array;
  nowMs: number;
}

export async function loadPermutationKey(
  db: Queryable,
  ctx: PermutationKeyContext,
  name: string = LINKS_KEY,
): Promise<Uint8Array> {
  await db.query(
    "INSERT INTO code_keys (name, key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
    [name, Buffer.from(ctx.randomBytes(KEY_BYTES)), new Date(ctx.nowMs)],
  );
  const { rows } = await db.query<{ key: Uint8Array }>("SELECT key FROM code_keys WHERE name = $1", [name]);
  return new Uint8Array(rows[0]!.key);
}
