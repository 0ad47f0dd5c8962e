/**
 * The simulator's model as JSON: bigint money becomes an integer string, instants
 * ISO 8601 UTC. POST answers carry only what never changes after the call (so a
 * replay is byte-identical); GET answers carry the current state.
 *
 * @example
 * reply.send(authorizationResultOf(state.getByKey("k1")));
 */
import type { Authorization, Refund } from "./acquirer-state.ts";

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

/** The answer to POST /v1/authorizations: fixed at the first call. */
export function authorizationResultOf(a: Authorization) {
  return {
    id: a.id,
    idempotencyKey: a.idempotencyKey,
    merchantId: a.merchantId,
    amountMinor: String(a.amountMinor),
    currency: a.currency,
    outcome: a.outcome,
    declineReason: a.declineReason ?? null,
    authorizedAt: iso(a.authorizedAtMs),
  };
}

export function refundResultOf(r: Refund) {
  return {
    id: r.id,
    authorizationId: r.authorizationId,
    idempotencyKey: r.idempotencyKey,
    amountMinor: String(r.amountMinor),
    currency: r.currency,
    refundedAt: iso(r.refundedAtMs),
  };
}

/** The current state of an authorization, with its attempts count: what a status query sees. */
export function authorizationViewOf(a: Authorization) {
  return {
    ...authorizationResultOf(a),
    status: a.status,
    capturedMinor: String(a.capturedMinor),
    capturedAt: iso(a.capturedAtMs),
    voidedAt: iso(a.voidedAtMs),
    refundedMinor: String(a.refundedMinor),
    refunds: a.refunds.map((r) => ({ ...refundResultOf(r), attempts: r.attempts })),
    attempts: a.attempts,
  };
}
