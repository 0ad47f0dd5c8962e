/**
 * Retention (WH-22, WH-18, WH-23), as bounded batches a sweeper repeats until each
 * returns less than its batch:
 *
 * - payloads past their expiry are set to NULL — the event row, its hash and size stay,
 *   so deliveries and attempts remain readable, idempotency still recognises the key, and
 *   replay answers a clear WEBHOOK_REPLAY_PAYLOAD_EXPIRED;
 * - unfinished deliveries past their deadline become `expired` (a visible final state:
 *   nothing promises a later delivery). A delivery under a LIVE lease is left to its
 *   worker, which will not start an attempt past the deadline anyway (send-check.ts);
 * - attempts older than the tenant's attempt retention are deleted and folded, in the
 *   same statement, into `attempt_stats` (per tenant, day, response class): the aggregate
 *   metrics outlive the rows;
 * - outbox rows published long ago are deleted.
 *
 * Every batch is `FOR UPDATE SKIP LOCKED` over an index range, so sweepers on several
 * replicas share the work and never wait on workers.
 *
 * @example
 * while ((await deleteExpiredPayloads(db, { nowMs, maxBatch: 500 })) === 500) {}
 */
import type { Queryable } from "@casebook/infra/sql/sql";

export interface SweepBatch {
  nowMs: number;
  /** Rows touched at most by this call. */
  maxBatch: number;
}

function checkBatch(maxBatch: number): void {
  if (!Number.isInteger(maxBatch) || maxBatch < 1)
    throw new RangeError(`maxBatch must be >= 1, got ${maxBatch}`);
}

/** Deletes (sets NULL) up to `maxBatch` payloads past their expiry; returns how many. */
export async function deleteExpiredPayloads(q: Queryable, batch: SweepBatch): Promise<number> {
  checkBatch(batch.maxBatch);
  const { rowCount } = await q.query(
    `WITH expired AS (
       SELECT id FROM events WHERE payload IS NOT NULL AND payload_expires_at <= $1
        ORDER BY payload_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE events e SET payload = NULL FROM expired WHERE e.id = expired.id`,
    [new Date(batch.nowMs), batch.maxBatch],
  );
  return rowCount;
}

/** Expires up to `maxBatch` unfinished, unleased deliveries whose deadline passed; returns how many. */
export async function expireOverdueDeliveries(q: Queryable, batch: SweepBatch): Promise<number> {
  checkBatch(batch.maxBatch);
  const { rowCount } = await q.query(
    `WITH overdue AS (
       SELECT id FROM deliveries
        WHERE state IN ('pending', 'in_flight') AND deadline_at <= $1
          AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
        ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE deliveries d
        SET state = 'expired', state_reason = 'deadline', lease_owner = NULL, lease_expires_at = NULL,
            lease_version = d.lease_version + 1, next_attempt_at = $1, finished_at = $1, updated_at = $1
       FROM overdue WHERE d.id = overdue.id`,
    [new Date(batch.nowMs), batch.maxBatch],
  );
  return rowCount;
}

/**
 * Deletes up to `maxBatch` attempts older than their tenant's attempt retention, adding
 * them to `attempt_stats` in the same statement; returns how many.
 */
export async function rollUpOldAttempts(q: Queryable, batch: SweepBatch): Promise<number> {
  checkBatch(batch.maxBatch);
  const { rows } = await q.query<{ n: bigint }>(
    `WITH doomed AS (
       SELECT a.delivery_id, a.attempt_no FROM attempts a JOIN tenants t ON t.id = a.tenant_id
        WHERE a.started_at < $1::timestamptz - make_interval(secs => t.attempt_retention_s)
        ORDER BY a.started_at LIMIT $2 FOR UPDATE OF a SKIP LOCKED
     ), gone AS (
       DELETE FROM attempts a USING doomed
        WHERE a.delivery_id = doomed.delivery_id AND a.attempt_no = doomed.attempt_no
       RETURNING a.tenant_id, a.started_at, a.response_class, a.duration_ms
     ), folded AS (
       INSERT INTO attempt_stats AS s (tenant_id, day, response_class, attempts, duration_ms_sum)
       SELECT tenant_id, (started_at AT TIME ZONE 'UTC')::date, response_class, count(*), sum(duration_ms)
         FROM gone GROUP BY 1, 2, 3
       ON CONFLICT (tenant_id, day, response_class) DO UPDATE
          SET attempts = s.attempts + EXCLUDED.attempts,
              duration_ms_sum = s.duration_ms_sum + EXCLUDED.duration_ms_sum
     )
     SELECT count(*) AS n FROM gone`,
    [new Date(batch.nowMs), batch.maxBatch],
  );
  return Number(rows[0]?.n ?? 0n);
}

/** Deletes up to `maxBatch` outbox rows published before `publishedBeforeMs`; returns how many. */
export async function deletePublishedOutbox(
  q: Queryable,
  batch: { publishedBeforeMs: number; maxBatch: number },
): Promise<number> {
  checkBatch(batch.maxBatch);
  const { rowCount } = await q.query(
    `DELETE FROM outbox WHERE id IN (
       SELECT id FROM outbox WHERE published_at IS NOT NULL AND published_at < $1
        ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [new Date(batch.publishedBeforeMs), batch.maxBatch],
  );
  return rowCount;
}

export interface AttemptStat {
  day: string;
  responseClass: string;
  attempts: bigint;
  durationMsSum: bigint;
}

/** The tenant's folded attempt counters, by day and response class. */
export async function attemptStats(q: Queryable, tenantId: string): Promise<AttemptStat[]> {
  const { rows } = await q.query<{
    day: string;
    response_class: string;
    attempts: bigint;
    duration_ms_sum: bigint;
  }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, response_class, attempts, duration_ms_sum
       FROM attempt_stats WHERE tenant_id = $1 ORDER BY day, response_class`,
    [tenantId],
  );
  return rows.map((r) => ({
    day: r.day,
    responseClass: r.response_class,
    attempts: r.attempts,
    durationMsSum: r.duration_ms_sum,
  }));
}
