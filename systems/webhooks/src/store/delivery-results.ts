/**
 * What a worker writes after a claim (WH-10, WH-18): each write is a compare-and-swap on
 * (delivery id, lease_version, owner) that says whether it won — the lease queue's fence
 * (`deliveryQueue`, delivery-claims.ts). A worker whose lease expired and
 * was taken over loses: its attempt is not recorded and the delivery's state is the new
 * owner's to decide. The attempt row and the state change are one statement, so an
 * attempt is recorded iff its outcome was applied.
 *
 * `recordAttempts` writes a batch (a worker that sends N requests concurrently flushes N
 * results in one round trip); `recordAttempt` is the batch of one. The outcome comes from
 * the delivery core's policy (response class → next state); the store adds one guard of
 * its own: a retry due at or after the delivery's deadline becomes `expired` — no attempt
 * ever starts past the retention window (WH-18, WH-23).
 *
 * @example
 * const [write] = await recordAttempts(db, [{ lease, startedAtMs, durationMs: 84, responseClass: "5xx",
 *   status: 503, next: { state: "pending", nextAttemptAtMs: nowMs + 4_000 } }], clock.nowMs());
 * if (!write.won) log.warn("lease lost: another worker owns this delivery now");
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { type DeliveryLease, deliveryQueue, queueLease } from "./delivery-claims.ts";

export type DeliveryState =
  | "pending"
  | "in_flight"
  | "succeeded"
  | "failed"
  | "expired"
  | "quarantined"
  | "cancelled";

/** States a delivery never leaves (except by an explicit replay). */
export const FINAL_STATES: readonly DeliveryState[] = [
  "succeeded",
  "failed",
  "expired",
  "quarantined",
  "cancelled",
];

/** Where an attempt leaves the delivery: done, retried later, or stopped for good. */
export type DeliveryOutcome =
  | { state: "succeeded" }
  | { state: "pending"; nextAttemptAtMs: number }
  | { state: "failed" | "quarantined" | "expired"; reason: string };

export interface AttemptResult {
  lease: DeliveryLease;
  startedAtMs: number;
  durationMs: number;
  /** The core's class of the outcome: `2xx`, `5xx`, `timeout`, `connect_error`… (`[a-z0-9_]{1,32}`). */
  responseClass: string;
  /** HTTP status when a response arrived. */
  status?: number | null;
  /** Phase that failed (`dns`, `connect`, `headers`, `body`, `policy`). */
  errorPhase?: string | null;
  /** Short error text, truncated to MAX_ERROR_CHARS; never the payload or a secret. */
  error?: string | null;
  /** Client errors in a row after this attempt, as the core computed it; omitted: unchanged. */
  clientErrorStreak?: number;
  next: DeliveryOutcome;
}

export interface AttemptWrite {
  deliveryId: string;
  /** False: the lease was lost, nothing was written for this delivery. */
  won: boolean;
  /** The state written (a late retry may have become `expired`). */
  state: DeliveryState | null;
  attemptNo: number | null;
}

export const MAX_ERROR_CHARS = 500;
export const MAX_REASON_CHARS = 200;
/** Largest batch of results in one write. */
export const MAX_RESULT_BATCH = 1_000;
const CLASS_PATTERN = /^[a-z0-9_]{1,32}$/;
const PHASE_PATTERN = /^[a-z_]{1,32}$/;

function checkResult(r: AttemptResult): void {
  const where = `attempt result for ${r.lease.deliveryId}`;
  if (!Number.isInteger(r.durationMs) || r.durationMs < 0) throw new RangeError(`${where}: durationMs`);
  if (!CLASS_PATTERN.test(r.responseClass)) throw new RangeError(`${where}: responseClass`);
  const status = r.status ?? null;
  if (status !== null && (!Number.isInteger(status) || status < 100 || status > 599))
    throw new RangeError(`${where}: status`);
  if ((r.errorPhase ?? null) !== null && !PHASE_PATTERN.test(r.errorPhase!))
    throw new RangeError(`${where}: errorPhase`);
  const streak = r.clientErrorStreak;
  if (streak !== undefined && (!Number.isInteger(streak) || streak < 0))
    throw new RangeError(`${where}: clientErrorStreak`);
  if (r.next.state === "pending" && !Number.isFinite(r.next.nextAttemptAtMs))
    throw new RangeError(`${where}: nextAttemptAtMs`);
}

// $1..$12 and $14 one array per column, $13 now. The CASEs are the deadline guard; the fence
// and the lease's end are the queue's (deliveryQueue), in a statement that also inserts the attempt.
const RECORD = `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::timestamptz[], $5::text[], $6::timestamptz[],
                         $7::int4[], $8::text[], $9::int4[], $10::text[], $11::text[], $12::text[], $14::int4[])
      AS i(id, lease_version, next_state, next_attempt_at, reason, started_at,
           duration_ms, response_class, status, error_phase, error, worker_id, client_error_streak)
  ), won AS (
    UPDATE deliveries t
       SET state = CASE WHEN i.next_state = 'pending' AND i.next_attempt_at >= t.deadline_at
                        THEN 'expired' ELSE i.next_state END,
           state_reason = CASE WHEN i.next_state = 'pending' AND i.next_attempt_at >= t.deadline_at
                               THEN 'deadline' ELSE i.reason END,
           next_attempt_at = CASE WHEN i.next_state = 'pending' AND i.next_attempt_at < t.deadline_at
                                  THEN i.next_attempt_at ELSE $13 END,
           finished_at = CASE WHEN i.next_state = 'pending' AND i.next_attempt_at < t.deadline_at
                              THEN NULL ELSE $13 END,
           attempts = t.attempts + 1, last_status = i.status, last_attempt_at = i.started_at,
           client_error_streak = COALESCE(i.client_error_streak, t.client_error_streak),
           ${deliveryQueue.releaseSql()}, updated_at = $13
      FROM input i
     WHERE ${deliveryQueue.fenceSql({ id: "i.id", version: "i.lease_version", owner: "i.worker_id" })}
    RETURNING t.id, t.tenant_id, t.state, t.attempts
  ), recorded AS (
    INSERT INTO attempts (delivery_id, attempt_no, tenant_id, worker_id, started_at, duration_ms,
                          response_class, status, error_phase, error)
    SELECT w.id, w.attempts, w.tenant_id, i.worker_id, i.started_at, i.duration_ms,
           i.response_class, i.status, i.error_phase, i.error
      FROM won w JOIN input i ON i.id = w.id
  )
  SELECT id, state, attempts FROM won`;

function columns(results: readonly AttemptResult[]): unknown[][] {
  const pick = <T>(f: (r: AttemptResult) => T) => results.map(f);
  return [
    pick((r) => r.lease.deliveryId),
    pick((r) => r.lease.leaseVersion),
    pick((r) => r.next.state),
    pick((r) => (r.next.state === "pending" ? new Date(r.next.nextAttemptAtMs) : null)),
    pick((r) => ("reason" in r.next ? r.next.reason.slice(0, MAX_REASON_CHARS) : null)),
    pick((r) => new Date(r.startedAtMs)),
    pick((r) => r.durationMs),
    pick((r) => r.responseClass),
    pick((r) => r.status ?? null),
    pick((r) => r.errorPhase ?? null),
    pick((r) => (r.error == null ? null : r.error.slice(0, MAX_ERROR_CHARS))),
    pick((r) => r.lease.workerId),
  ];
}

/** Applies each result whose lease is still current; one write per input, in input order. */
export async function recordAttempts(
  q: Queryable,
  results: readonly AttemptResult[],
  nowMs: number,
): Promise<AttemptWrite[]> {
  if (results.length === 0) return [];
  if (results.length > MAX_RESULT_BATCH)
    throw new RangeError(`at most ${MAX_RESULT_BATCH} results per write`);
  for (const r of results) checkResult(r);
  // One row per delivery: a duplicate would be updated once but inserted twice (a PK violation).
  if (new Set(results.map((r) => r.lease.deliveryId)).size !== results.length)
    throw new RangeError("recordAttempts: a delivery appears twice in one batch");
  const { rows } = await q.query<{ id: string; state: DeliveryState; attempts: number }>(RECORD, [
    ...columns(results),
    new Date(nowMs),
    results.map((r) => r.clientErrorStreak ?? null),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return results.map((r) => {
    const row = byId.get(r.lease.deliveryId);
    return row
      ? { deliveryId: row.id, won: true, state: row.state, attemptNo: row.attempts }
      : { deliveryId: r.lease.deliveryId, won: false, state: null, attemptNo: null };
  });
}

/** `recordAttempts` of one result. */
export async function recordAttempt(
  q: Queryable,
  result: AttemptResult,
  nowMs: number,
): Promise<AttemptWrite> {
  const [write] = await recordAttempts(q, [result], nowMs);
  return write!;
}

/**
 * Ends a claimed delivery without an attempt — the re-check before sending found a reason
 * not to send (WH-04, WH-18). False when the lease was lost.
 */
export async function finishWithoutAttempt(
  q: Queryable,
  lease: DeliveryLease,
  end: { state: "cancelled" | "expired" | "failed" | "quarantined"; reason: string; nowMs: number },
): Promise<boolean> {
  const write = await deliveryQueue.update(q, queueLease(lease), {
    nowMs: end.nowMs,
    set: (p) =>
      `state = ${p.add(end.state)}, state_reason = ${p.add(end.reason.slice(0, MAX_REASON_CHARS))},
       next_attempt_at = ${p.now}, finished_at = ${p.now}, updated_at = ${p.now}`,
  });
  return write.won;
}
