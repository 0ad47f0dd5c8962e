/**
 * The per-endpoint limits a worker's scheduler applies (WH-15; columns of
 * migrations/002_subscriptions.sql): concurrency and rate of each subscription, read for a
 * batch of claimed deliveries in one statement. A claim row does not carry them, and the
 * scheduler needs them before the delivery is queued, so one read per claim round — cached
 * by the caller — beats one per delivery.
 *
 * @example
 * const limits = await endpointLimits(db, ["sub_…", "sub_…"]);
 * limits.get("sub_…"); // { maxConcurrency: 4, rateLimitPerS: null }
 */
import type { Queryable } from "@casebook/infra/sql/sql";

export interface StoredEndpointLimits {
  maxConcurrency: number;
  /** null: no rate limit. */
  rateLimitPerS: number | null;
}

/** Most subscriptions read in one call. */
export const MAX_LIMITS_BATCH = 1_000;

/** The limits of each known subscription id (unknown ids are absent). */
export async function endpointLimits(
  q: Queryable,
  subscriptionIds: readonly string[],
): Promise<Map<string, StoredEndpointLimits>> {
  if (subscriptionIds.length === 0) return new Map();
  if (subscriptionIds.length > MAX_LIMITS_BATCH)
    throw new RangeError(`at most ${MAX_LIMITS_BATCH} subscriptions per read`);
  const { rows } = await q.query<{ id: string; max_concurrency: number; rate_limit_per_s: number | null }>(
    "SELECT id, max_concurrency, rate_limit_per_s FROM subscriptions WHERE id = ANY($1::text[])",
    [[...new Set(subscriptionIds)]],
  );
  return new Map(
    rows.map((r) => [r.id, { maxConcurrency: r.max_concurrency, rateLimitPerS: r.rate_limit_per_s }]),
  );
}
