/**
 * Users' API keys and Idempotency-Keys, on infra's shared stores (migrations/002):
 *
 * - `userKeys`: `fdk_<16 hex>_<43 base64url>` keys (kit's api-key scheme), one table
 *   `user_api_keys` owned by `accounts`; only sha256(key) is stored. A key acts as its user.
 * - `feedIdempotencyStore`: Stripe's rule on POST /v1/users/{id}/posts, scoped by the author
 *   (`FEED_IDEMPOTENCY_*`: in progress 409, another request with the key 422).
 * - `createUserWithKey`: the account (if new) and its first key in one transaction — what the
 *   admin API's POST /v1/admin/users does for `casebook feed new-key`.
 * - `batchedKeyChecks`: the key table for kit's VerifiedKeyCache, batched — the checks asked
 *   while one batch is in flight go together in the next, one SELECT each (kit's GroupCommit,
 *   infra's `authenticatePresented`): 2 000 readers' keys re-checked every 2.5 s cost a few
 *   queries a second instead of 800 (issue 20's read bench).
 *
 * @example
 * const owner = await userKeys.authenticate(db, key, nowMs); // the user id (int8), or undefined
 * const checks = batchedKeyChecks(db, clock); await checks.verify([checks.parse(key)!]); // the same answer, batched with its neighbours
 */
import { ApiKeyTable } from "@casebook/infra/sql/api-key-table";
import { IdempotencyStore, type IdempotencyStoreOptions } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import {
  apiKeyScheme,
  type IssuedApiKey,
  type PresentedApiKey,
  type RandomBytes,
} from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import { GroupCommit } from "@casebook/kit/group-commit";
import { defineIdempotencyErrors } from "@casebook/kit/idempotency";
import type { VerifiedKeySource } from "@casebook/kit/verified-key-cache";

export const userKeys = new ApiKeyTable({
  table: "user_api_keys",
  ownerColumn: "user_id",
  ownerTable: "accounts",
  scheme: apiKeyScheme("fdk"),
});

export const feedIdempotency = defineIdempotencyErrors("FEED");

/** The shared store's table, as migration 002 made it (scoped by the author). */
export const FEED_IDEMPOTENCY_TABLE = { table: "idempotency_keys", scopeColumn: "user_id" } as const;

export function feedIdempotencyStore(
  db: Database,
  options: Omit<IdempotencyStoreOptions, "table" | "scopeColumn" | "errors"> = {},
): IdempotencyStore {
  return new IdempotencyStore(db, {
    ...FEED_IDEMPOTENCY_TABLE,
    errors: feedIdempotency,
    ...options,
  });
}

/** The user a key belongs to, or undefined (malformed, unknown, wrong, expired or revoked). */
export async function userOfKey(db: Database, key: string, nowMs: number): Promise<bigint | undefined> {
  // The owner column is int8: the engines hand it back as a bigint (the table's type says string).
  const owner: unknown = await userKeys.authenticate(db, key, nowMs);
  return owner === undefined ? undefined : BigInt(owner as string | bigint);
}

/** Keys one batched check reads at most (one SELECT … WHERE prefix = ANY). */
export const KEY_CHECK_BATCH = 500;
/** Checks waiting at most behind the batch in flight; past it a check fails fast (503 GROUP_COMMIT_QUEUE_FULL). */
export const KEY_CHECKS_PENDING = 100_000;

/**
 * The key table as kit's VerifiedKeyCache reads it, batched: a read's check goes at once when
 * no query is in flight, and those asked while one runs go together in the next (up to
 * KEY_CHECK_BATCH) — the cache's background re-checks, already in batches, ride the same way.
 * Each key is answered as `userOfKey` would.
 */
export function batchedKeyChecks(db: Database, clock: Clock): BatchedKeyChecks {
  const authenticate = async (presented: PresentedApiKey[]) =>
    (await userKeys.authenticatePresented(db, presented, clock.nowMs())).map((owner: unknown) =>
      owner === undefined ? undefined : BigInt(owner as string | bigint),
    );
  const checks = new GroupCommit<PresentedApiKey, bigint | undefined>(authenticate, {
    maxBatch: KEY_CHECK_BATCH,
    maxPending: KEY_CHECKS_PENDING,
  });
  return {
    parse: (key) => userKeys.scheme.parse(key),
    verify: (presented) => Promise.all(presented.map((p) => checks.submit(p))),
    stats: () => ({ queries: checks.stats.batches, keys: checks.stats.items }),
  };
}

export interface BatchedKeyChecks extends VerifiedKeySource<bigint> {
  /** Checks made so far and the SELECTs they took. */
  stats(): { readonly queries: number; readonly keys: number };
}

/** The account `userId` (created when new) and a fresh key for it; `created` says whether it was new. */
export async function createUserWithKey(
  db: Database,
  userId: bigint,
  ctx: { nowMs: number; randomBytes: RandomBytes },
): Promise<{ created: boolean; apiKey: IssuedApiKey }> {
  return db.transaction(async (tx) => {
    const { rowCount } = await tx.query("INSERT INTO accounts (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [
      userId,
    ]);
    const apiKey = await userKeys.issue(tx, String(userId), ctx);
    return { created: rowCount === 1, apiKey };
  });
}
