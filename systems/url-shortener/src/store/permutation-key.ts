/**
 * The permutation's key (domain/feistel-permutation.ts), stored once in `code_keys`: the first
 * start inserts a random one (ON CONFLICT DO NOTHING, so replicas starting together agree on
 * the first insert), every start reads the stored one. A configured key
 * (URL_SHORTENER_CODE_KEY) must equal the stored one: a different key on a store with codes
 * could map a later number onto an earlier code.
 *
 * @example
 * const key = await loadPermutationKey(db, { randomBytes, nowMs: Date.now() });
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { KEY_BYTES } from "../domain/feistel-permutation.ts";

const KEY_NAME = "links";

export interface PermutationKeyContext {
  randomBytes(size: number): Uint8Array;
  nowMs: number;
  /** A key from the configuration: stored when none is, refused when another one is. */
  configured?: Uint8Array | undefined;
}

export async function loadPermutationKey(db: Queryable, ctx: PermutationKeyContext): Promise<Uint8Array> {
  const candidate = ctx.configured ?? ctx.randomBytes(KEY_BYTES);
  await db.query(
    "INSERT INTO code_keys (name, key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
    [KEY_NAME, Buffer.from(candidate), new Date(ctx.nowMs)],
  );
  const { rows } = await db.query<{ key: Uint8Array }>("SELECT key FROM code_keys WHERE name = $1", [
    KEY_NAME,
  ]);
  const stored = new Uint8Array(rows[0]!.key);
  if (ctx.configured && Buffer.compare(Buffer.from(stored), Buffer.from(ctx.configured)) !== 0) {
    throw new Error(
      "URL_SHORTENER_CODE_KEY differs from the key this store's codes were made with; unset it or use the stored one",
    );
  }
  return stored;
}
