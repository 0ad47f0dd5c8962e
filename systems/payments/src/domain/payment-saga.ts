/**
 * The payment saga as a pure state machine (seed 000 §4.3, PY-05, PY-06, PY-12, PY-16):
 *
 *   authorize ──approved──▶ capture (capture=true) ──captured──▶ done: captured   (ledger: post the hold)
 *       │         └──────▶ done: authorized (capture=false; the hold stays pending until a capture)
 *       ├──declined──▶ done: declined                                          (compensate: void the hold)
 *       ├──unknown (sent, no answer)──▶ query by key ──▶ decide from what the acquirer says
 *       └──unavailable (not processed)──▶ authorize again after backoff; budget spent ──▶ query ──▶ failed
 *
 * The reserve step (a pending ledger hold) happens when the payment is created, in the same
 * transaction. Every acquirer call carries the payment's one acquirer key, so any repeat is
 * harmless at the acquirer; after an unknown outcome the saga never guesses: it asks
 * (GET /v1/authorizations/by-key/{key}) and only then commits or compensates (PY-06).
 *
 * No I/O here: the orchestrator performs the call, feeds its outcome to `decide`, and
 * persists the decision (step, status, ledger action, next run) in one transaction.
 *
 * @example
 * const state = initialSagaState({ capture: true });
 * const next = decide(state, { kind: "approved", authorizationId: "auth_1" }, { elapsedMs: 0, policy });
 * next.step; // "capture"
 */
import type { BackoffPolicy } from "@casebook/kit/backoff";

export type PaymentStatus =
  | "pending"
  | "authorized"
  | "captured"
  | "voided"
  | "declined"
  | "failed"
  | "refunded"
  | "partially_refunded";

/** What the saga does next; "done" sagas are never claimed. */
export type SagaStep = "authorize" | "query" | "capture" | "void" | "done";

/** What the merchant asked for: the capture flag decides after "authorize"; capture/void come later via the API. */
export type SagaIntent = "authorize" | "capture" | "void";

export const PAYMENT_STATUSES: readonly PaymentStatus[] = [
  "pending",
  "authorized",
  "captured",
  "voided",
  "declined",
  "failed",
  "refunded",
  "partially_refunded",
];
export const SAGA_STEPS: readonly SagaStep[] = ["authorize", "query", "capture", "void", "done"];

export interface SagaState {
  readonly step: SagaStep;
  readonly status: PaymentStatus;
  readonly intent: SagaIntent;
  /** Authorize-and-capture (true) or authorize only (false, PY-16). */
  readonly capture: boolean;
  /** Acquirer calls made so far: the backoff exponent. */
  readonly attempts: number;
  readonly authorizationId: string | null;
}

/** What one acquirer call (or status query) told the saga. */
export type StepOutcome =
  | { readonly kind: "approved"; readonly authorizationId: string }
  | { readonly kind: "declined"; readonly authorizationId: string | null; readonly reason: string }
  | { readonly kind: "captured"; readonly authorizationId: string }
  | { readonly kind: "voided"; readonly authorizationId: string }
  /** The status query found no authorization with the key: the acquirer never processed one. */
  | { readonly kind: "not-found" }
  /** The request may have been processed, no answer came (timeout, reset after sending). */
  | { readonly kind: "unknown"; readonly reason: string }
  /** Certainly not processed (refused to connect, 5xx before processing, breaker open, rate limited). */
  | { readonly kind: "unavailable"; readonly reason: string; readonly retryAfterMs?: number }
  /** A definitive 4xx refusal (e.g. idempotency mismatch, already captured). */
  | { readonly kind: "rejected"; readonly code: string };

/** The ledger action committed together with the decision. */
export type LedgerAction = "none" | "post-hold" | "void-hold";

export interface SagaDecision extends SagaState {
  /** Wait this long before the next step (0: go on now). */
  readonly delayMs: number;
  readonly ledger: LedgerAction;
  readonly declineReason: string | null;
  /** Why the saga failed, for the audit trail; null otherwise. */
  readonly failure: string | null;
  /** True when this decision ends the saga: the stored response is written with it. */
  readonly finished: boolean;
}

export interface DecideContext {
  /** Time since the saga started: the retry budget of the authorize step is measured against it. */
  readonly elapsedMs: number;
  /** Backoff with jitter, a budget and an attempt limit for the authorize step. */
  readonly policy: BackoffPolicy;
}

export function initialSagaState(options: { capture: boolean }): SagaState {
  return {
    step: "authorize",
    status: "pending",
    intent: "authorize",
    capture: options.capture,
    attempts: 0,
    authorizationId: null,
  };
}

function decision(state: SagaState, patch: Partial<SagaDecision>): SagaDecision {
  const merged: SagaDecision = {
    ...state,
    delayMs: 0,
    ledger: "none",
    declineReason: null,
    failure: null,
    finished: false,
    ...patch,
  };
  if (merged.finished !== (merged.step === "done")) throw new Error("saga: finished iff step is done");
  if (merged.delayMs < 0 || !Number.isFinite(merged.delayMs)) throw new RangeError("saga: bad delayMs");
  return merged;
}

function finish(state: SagaState, patch: Partial<SagaDecision>): SagaDecision {
  return decision(state, { step: "done", finished: true, ...patch });
}

/** Backoff that never gives up (capture, void, query: money already moved must be settled). */
function retryLater(state: SagaState, ctx: DecideContext, retryAfterMs = 0): Partial<SagaDecision> {
  const attempts = state.attempts + 1;
  return { attempts, delayMs: Math.max(ctx.policy.delayMs(attempts), retryAfterMs) };
}

/** After the acquirer approved: capture, void, or stop at "authorized" per the intent and flag. */
function afterApproval(state: SagaState, authorizationId: string): SagaDecision {
  const approved = { ...state, authorizationId, status: "authorized" as const, attempts: 0 };
  if (state.intent === "void") return decision(approved, { step: "void" });
  if (state.intent === "capture" || state.capture) return decision(approved, { step: "capture" });
  return finish(approved, {});
}

/** Outcomes every step reads the same way: the acquirer's final word on the authorization. */
function settled(state: SagaState, outcome: StepOutcome): SagaDecision | undefined {
  switch (outcome.kind) {
    case "approved":
      return afterApproval(state, outcome.authorizationId);
    case "declined":
      return finish(
        { ...state, status: "declined", authorizationId: outcome.authorizationId },
        { ledger: "void-hold", declineReason: outcome.reason },
      );
    case "captured":
      return finish(
        { ...state, status: "captured", authorizationId: outcome.authorizationId },
        { ledger: "post-hold" },
      );
    case "voided":
      return finish(
        { ...state, status: "voided", authorizationId: outcome.authorizationId },
        { ledger: "void-hold" },
      );
    default:
      return undefined;
  }
}

function decideAuthorize(state: SagaState, outcome: StepOutcome, ctx: DecideContext): SagaDecision {
  switch (outcome.kind) {
    case "unknown":
      // PY-06: never retry blind and never give up blind: ask the acquirer by key.
      return decision(state, { step: "query", ...retryLater(state, ctx) });
    case "unavailable": {
      const attempts = state.attempts + 1;
      const next = ctx.policy.next(attempts, ctx.elapsedMs);
      if (!next.retry) return decision(state, { step: "query", attempts, delayMs: 0 });
      return decision(state, { attempts, delayMs: Math.max(next.delayMs, outcome.retryAfterMs ?? 0) });
    }
    case "rejected":
    case "not-found":
      return finish(
        { ...state, status: "failed" },
        { ledger: "void-hold", failure: `acquirer refused: ${outcomeLabel(outcome)}` },
      );
    default:
      return settled(state, outcome)!;
  }
}

function decideQuery(state: SagaState, outcome: StepOutcome, ctx: DecideContext): SagaDecision {
  switch (outcome.kind) {
    case "not-found": {
      // Nothing was processed: authorize again (same key), unless the budget is spent.
      const next = ctx.policy.next(Math.max(1, state.attempts), ctx.elapsedMs);
      if (!next.retry || state.intent !== "authorize") {
        return finish(
          { ...state, status: "failed" },
          { ledger: "void-hold", failure: "acquirer unavailable until the retry budget ran out" },
        );
      }
      return decision(state, { step: "authorize" });
    }
    case "unknown":
    case "unavailable":
    case "rejected":
      return decision(state, retryLater(state, ctx, retryAfterOf(outcome)));
    default:
      return settled(state, outcome)!;
  }
}

/** capture and void: the authorization exists; repeat until the acquirer confirms (idempotent per id). */
function decideSettle(state: SagaState, outcome: StepOutcome, ctx: DecideContext): SagaDecision {
  switch (outcome.kind) {
    case "unknown":
    case "unavailable":
      return decision(state, retryLater(state, ctx, retryAfterOf(outcome)));
    case "rejected":
    case "not-found":
      // e.g. ALREADY_CAPTURED: learn the true state before deciding anything.
      return decision(state, { step: "query", ...retryLater(state, ctx) });
    case "approved":
      // A status query can still say "approved" while a capture/void is pending: do it.
      return decision({ ...state, authorizationId: outcome.authorizationId }, { step: state.step });
    default:
      return settled(state, outcome)!;
  }
}

function retryAfterOf(outcome: StepOutcome): number {
  return outcome.kind === "unavailable" ? (outcome.retryAfterMs ?? 0) : 0;
}

function outcomeLabel(outcome: StepOutcome): string {
  return outcome.kind === "rejected" ? outcome.code : outcome.kind;
}

/**
 * The next state after `outcome` of the current step. Pure: same inputs, same decision.
 *
 * @example
 * decide(state, { kind: "unknown", reason: "headers timeout" }, ctx).step; // "query"
 */
export function decide(state: SagaState, outcome: StepOutcome, ctx: DecideContext): SagaDecision {
  switch (state.step) {
    case "authorize":
      return decideAuthorize(state, outcome, ctx);
    case "query":
      return decideQuery(state, outcome, ctx);
    case "capture":
    case "void":
      return decideSettle(state, outcome, ctx);
    case "done":
      throw new Error("saga: a finished saga takes no more steps");
  }
}

/**
 * Where a saga resumes when its previous owner's lease expired: an authorize call may have
 * been in flight when the owner died, so its outcome is unknown and the resumer asks first.
 *
 * @example
 * resumeStep({ ...state, step: "authorize" }, { takenOver: true }); // "query"
 */
export function resumeStep(state: SagaState, options: { takenOver: boolean }): SagaStep {
  return options.takenOver && state.step === "authorize" ? "query" : state.step;
}

/**
 * A merchant's capture or void of an authorized payment (PY-16): the saga's next step.
 * Returns undefined when the payment is not in a state that allows it.
 *
 * @example
 * requestSettlement({ ...state, step: "done", status: "authorized" }, "capture")?.step; // "capture"
 */
export function requestSettlement(state: SagaState, action: "capture" | "void"): SagaState | undefined {
  if (state.step === "done" && state.status === "authorized")
    return { ...state, step: action, intent: action, attempts: 0 };
  // A repeat while the same action is in flight is fine (idempotent); anything else is a conflict.
  if (state.step === action && state.intent === action) return state;
  return undefined;
}

/** Status after refunds: full → refunded, some → partially_refunded (PY-15, PY-16). */
export function statusAfterRefunds(capturedMinor: bigint, refundedMinor: bigint): PaymentStatus {
  if (refundedMinor < 0n || refundedMinor > capturedMinor) throw new RangeError("refunded out of range");
  if (refundedMinor === 0n) return "captured";
  return refundedMinor === capturedMinor ? "refunded" : "partially_refunded";
}

/**
 * The amount a capture takes (PY-16, Stripe's `amount_to_capture`): the part the merchant asked
 * for, or all of the authorization when it asked for none. Throws when the part is out of range
 * (the API refuses that before anything is written; here it is an invariant).
 *
 * @example
 * captureAmountOf(5_000n, 3_000n); // 3000n
 * captureAmountOf(5_000n, null);   // 5000n
 */
export function captureAmountOf(authorizedMinor: bigint, requestedMinor: bigint | null): bigint {
  const amount = requestedMinor ?? authorizedMinor;
  if (amount <= 0n || amount > authorizedMinor) throw new RangeError("capture amount out of 1..authorized");
  return amount;
}

/** What the acquirer said of a stuck refund: its status by key (`query`) or a new send (`send`). */
export type RefundRetryOutcome =
  | { readonly kind: "refunded"; readonly refundId: string }
  | { readonly kind: "not-found" }
  | { readonly kind: "unknown"; readonly reason: string }
  | { readonly kind: "unavailable"; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: "rejected"; readonly code: string };

/**
 * The refund retry worker's next move (PY-15, refund-retrier.ts):
 * - `complete`: the acquirer has the refund — book the reversal;
 * - `send`: the acquirer never saw the key — send the refund, with that same key;
 * - `fail`: a definitive refusal — release the reserved amount;
 * - `retry`: no answer — ask again after `delayMs`;
 * - `give-up`: the retry bound is spent with the outcome still unknown — a visible terminal
 *   state that keeps the reservation (the refund may have happened); the D+1 file decides.
 */
export type RefundRetryDecision =
  | { readonly action: "complete"; readonly refundId: string }
  | { readonly action: "send" }
  | { readonly action: "fail"; readonly failure: string }
  | { readonly action: "retry"; readonly attempts: number; readonly delayMs: number; readonly reason: string }
  | { readonly action: "give-up"; readonly attempts: number; readonly failure: string };

export interface RefundRetryContext {
  /** Worker rounds already spent on this refund: the backoff exponent. */
  readonly attempts: number;
  /** Since the refund was created: the policy's budget is measured against it. */
  readonly elapsedMs: number;
  /** Backoff with its named bounds (`maxAttempts`, `budgetMs`). */
  readonly policy: BackoffPolicy;
}

function retryOrGiveUp(reason: string, ctx: RefundRetryContext, retryAfterMs = 0): RefundRetryDecision {
  const attempts = ctx.attempts + 1;
  const next = ctx.policy.next(attempts, ctx.elapsedMs);
  if (!next.retry) {
    return {
      action: "give-up",
      attempts,
      failure: `acquirer outcome still unknown after ${attempts} attempts (${next.reason}; last: ${reason}); the D+1 settlement file decides`,
    };
  }
  return { action: "retry", attempts, delayMs: Math.max(next.delayMs, retryAfterMs), reason };
}

/**
 * Decides what a stuck refund does after `outcome` of `phase`. Pure. A query never leads to a
 * failure (only a refusal of a send is definitive), and a send follows only a "not-found" query,
 * so the acquirer, counting refunds per key, never sees one refund twice from this path.
 *
 * @example
 * decideRefundRetry("query", { kind: "not-found" }, ctx);             // { action: "send" }
 * decideRefundRetry("send", { kind: "refunded", refundId: "r1" }, ctx); // { action: "complete", refundId: "r1" }
 */
export function decideRefundRetry(
  phase: "query" | "send",
  outcome: RefundRetryOutcome,
  ctx: RefundRetryContext,
): RefundRetryDecision {
  switch (outcome.kind) {
    case "refunded":
      return { action: "complete", refundId: outcome.refundId };
    case "not-found":
      return phase === "query" ? { action: "send" } : retryOrGiveUp("send answered not-found", ctx);
    case "rejected":
      return phase === "send"
        ? { action: "fail", failure: `acquirer refused: ${outcome.code}` }
        : retryOrGiveUp(`query refused: ${outcome.code}`, ctx);
    case "unknown":
      return retryOrGiveUp(outcome.reason, ctx);
    case "unavailable":
      return retryOrGiveUp(outcome.reason, ctx, outcome.retryAfterMs ?? 0);
  }
}
