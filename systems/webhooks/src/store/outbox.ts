/**
 * The relay's side of the transactional outbox (rows written by event-repository's
 * `enqueue`; schema: migrations/003_events.sql). A relay claims a bounded batch of due
 * rows — `FOR UPDATE SKIP LOCKED`, so concurrent relays take disjoint rows without
 * waiting — under a lease with a fencing token, publishes them, and marks each one.
 *
 * At least once, by design (WH-14): a relay that dies after publishing and before
 * marking leaves the row leased; when the lease runs out it is due again and another
 * relay publishes the same event id once more. Fan-out is idempotent (WH-09), so the
 * second publish creates nothing.
 *
 * @example
 * const claims = await claimOutbox(db, { owner: "relay-1", nowMs, leaseMs: 30_000, maxBatch: 100 });
 * for (const c of claims) { await publish(c); await markPublished(db, c, clock.nowMs()); }
 */
import type { Queryable } from "@casebook/infra/sql/sql";

/** Bound on the text kept from a publisher's error. */
export const LAST_ERROR_MAX_CHARS = 1_000;
/** Largest batch one claim may take: a lease covers the whole batch's publishing. */
export const MAX_OUTBOX_BATCH = 1_000;

/** One outbox row claimed by a relay; `token` fences its marks. */
export interface OutboxClaim {
  id: bigint;
  eventId: string;
  tenantId: string;
  token: bigint;
  /** Publish attempts of this row, this one included: above 1 means a retry or a re-publish. */
  publishCount: number;
}

export interface ClaimOutboxOptions {
  owner: string;
  nowMs: number;
  leaseMs: number;
  /** 1..MAX_OUTBOX_BATCH rows. */
  maxBatch: number;
}

const CLAIM = `
  WITH due AS (
    SELECT id FROM outbox
     WHERE published_at IS NULL AND next_attempt_at <= $1
     ORDER BY next_attempt_at, id LIMIT $2
     FOR UPDATE SKIP LOCKED)
  UPDATE outbox o
     SET lease_owner = $3, lease_until = $4, next_attempt_at = $4,
         lease_token = o.lease_token + 1, publish_count = o.publish_count + 1
    FROM due WHERE o.id = due.id
  RETURNING o.id, o.event_id, o.tenant_id, o.lease_token, o.publish_count`;

/**
 * Claims up to `maxBatch` due rows, oldest first, for `leaseMs`. A row whose relay died
 * is due again when its lease ends (the lease end is its `next_attempt_at`).
 */
export async function claimOutbox(q: Queryable, options: ClaimOutboxOptions): Promise<OutboxClaim[]> {
  const { maxBatch, leaseMs } = options;
  if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_OUTBOX_BATCH)
    throw new RangeError(`maxBatch must be an integer in 1..${MAX_OUTBOX_BATCH}, got ${maxBatch}`);
  if (!Number.isInteger(leaseMs) || leaseMs < 1) throw new RangeError(`leaseMs must be >= 1, got ${leaseMs}`);
  const { rows } = await q.query<{
    id: bigint;
    event_id: string;
    tenant_id: string;
    lease_token: bigint;
    publish_count: number;
  }>(CLAIM, [new Date(options.nowMs), maxBatch, options.owner, new Date(options.nowMs + leaseMs)]);
  return rows
    .map((r) => ({
      id: r.id,
      eventId: r.event_id,
      tenantId: r.tenant_id,
      token: r.lease_token,
      publishCount: r.publish_count,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Marks the row published; false when the claim was lost (another relay took the row over). */
export async function markPublished(q: Queryable, claim: OutboxClaim, nowMs: number): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE outbox SET published_at = $3, lease_owner = NULL, lease_until = NULL, last_error = NULL
      WHERE id = $1 AND lease_token = $2 AND published_at IS NULL`,
    [claim.id, claim.token, new Date(nowMs)],
  );
  return rowCount === 1;
}

/** Gives the row back after a failed publish, due again at `retryAtMs`; false when the claim was lost. */
export async function recordPublishFailure(
  q: Queryable,
  claim: OutboxClaim,
  failure: { error: string; retryAtMs: number },
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE outbox SET lease_owner = NULL, lease_until = NULL, next_attempt_at = $3, last_error = $4
      WHERE id = $1 AND lease_token = $2 AND published_at IS NULL`,
    [claim.id, claim.token, new Date(failure.retryAtMs), failure.error.slice(0, LAST_ERROR_MAX_CHARS)],
  );
  return rowCount === 1;
}

/** Unpublished rows and the age of the oldest, for the relay's lag metric. */
export async function outboxLag(
  q: Queryable,
  nowMs: number,
): Promise<{ unpublished: bigint; oldestAgeMs: number }> {
  const { rows } = await q.query<{ n: bigint; oldest: Date | null }>(
    "SELECT count(*) AS n, min(created_at) AS oldest FROM outbox WHERE published_at IS NULL",
  );
  const oldest = rows[0]?.oldest ?? null;
  return {
    unpublished: rows[0]?.n ?? 0n,
    oldestAgeMs: oldest === null ? 0 : Math.max(0, nowMs - oldest.getTime()),
  };
}

/** Gives a claimed row back unpublished, due at `nowMs` (a relay stopping, or a batch its lease cannot cover). */
export async function releaseOutboxClaim(q: Queryable, claim: OutboxClaim, nowMs: number): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE outbox SET lease_owner = NULL, lease_until = NULL, next_attempt_at = $3
      WHERE id = $1 AND lease_token = $2 AND published_at IS NULL`,
    [claim.id, claim.token, new Date(nowMs)],
  );
  return rowCount === 1;
}
