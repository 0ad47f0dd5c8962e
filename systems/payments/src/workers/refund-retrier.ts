/**
 * The refund retry worker (PY-15, PY-06 for refunds): a refund whose acquirer outcome was unknown
 * (the request answered 202) stays `pending`; once it is past `next_attempt_at` with no live lease,
 * any number of these workers, in any number of processes, may claim it — `FOR UPDATE SKIP
 * LOCKED` + a lease + a version fence (refund-repository.ts), the saga orchestrator's way.
 *
 * One round per claimed refund: ask the acquirer by the refund's key FIRST (never re-send blind);
 * "refunded" → book the reversal; "not found" → send the refund, with that same key; no answer →
 * back off (kit backoff) and try again, up to `maxAttempts` / `budgetMs`; past the bound →
 * `unresolved`, a terminal state anyone can see (GET the refund, the log, the metric) that keeps the
 * reservation until the D+1 file decides. A definitive refusal → `failed`, reservation released.
 *
 * Why never twice: only the lease holder calls the acquirer for a refund, the lease outlives both
 * calls of a round (checked at construction), a send follows only a "not found" from the query,
 * and settling is a compare-and-set on the claim's version — a worker that lost its lease writes
 * nothing. The acquirer's per-key dedup is the last line, not the first.
 *
 * @example
 * const retrier = new RefundRetrier({ db, acquirer, clock: systemClock, random: systemRandom, owner: "w1" });
 * retrier.start();
 * await retrier.stop();
 */
import type { Logger } from "@casebook/infra/http/logger";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { BackoffPolicy } from "@casebook/kit/backoff";
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import { decideRefundRetry, type RefundRetryDecision } from "../domain/payment-saga.ts";
import { paymentErrors } from "../errors.ts";
import { findPayment, lockPayment } from "../store/payment-repository.ts";
import {
  claimDueRefunds,
  completeRefund,
  failRefund,
  giveUpRefund,
  postponeRefund,
  type Refund,
} from "../store/refund-repository.ts";
import { loopFailureBackoff } from "./loop-backoff.ts";
import { LEASE_MARGIN_MS } from "./saga-orchestrator.ts";

/** How a round ended, as a metric label: settled, postponed, given up, or threw. */
export type RefundRetryOutcome = "succeeded" | "failed" | "retry" | "unresolved" | "error";

/** Told of every claimed refund's round: how it ended and how long it took. */
export interface RefundRetryObserver {
  refundRetried(outcome: RefundRetryOutcome, seconds: number): void;
}

export interface RefundRetryBackoff {
  baseMs: number;
  capMs: number;
  /** Rounds before a refund is given up as unresolved. */
  maxAttempts: number;
  /** Since the refund's creation: past it, no further round is scheduled. */
  budgetMs: number;
}

export interface RefundRetrierOptions {
  db: Database;
  acquirer: AcquirerClient;
  clock: Clock;
  random: RandomSource;
  /** Unique per process/loop: the lease owner written on claimed rows. */
  owner: string;
  /** Claim duration: must cover a round's two acquirer calls. Default 3 × call deadline + margin. */
  leaseMs?: number;
  /** Refunds claimed per round. Default 8. */
  maxBatch?: number;
  /** Pause between rounds that found nothing due. Default 1000. */
  pollIntervalMs?: number;
  backoff?: Partial<RefundRetryBackoff>;
  observer?: RefundRetryObserver;
  /** A line per round (info; unresolved at warn), with the refund's correlationId. */
  log?: Logger;
  onError?: (error: unknown) => void;
}

export const defaultRefundRetryBackoff: Readonly<RefundRetryBackoff> = Object.freeze({
  baseMs: 1_000,
  capMs: 300_000,
  maxAttempts: 20,
  budgetMs: 86_400_000,
});

const OUTCOME_OF: Readonly<Record<RefundRetryDecision["action"], RefundRetryOutcome>> = {
  complete: "succeeded",
  fail: "failed",
  retry: "retry",
  "give-up": "unresolved",
  send: "error", // never persisted: "send" is always followed by the send's own decision
};

export class RefundRetrier {
  readonly owner: string;
  readonly leaseMs: number;
  readonly #o: RefundRetrierOptions;
  readonly #policy: BackoffPolicy;
  readonly #loop: BackgroundLoop;

  constructor(options: RefundRetrierOptions) {
    this.#o = options;
    this.owner = options.owner;
    const deadlineMs = options.acquirer.callDeadlineMs;
    this.leaseMs = options.leaseMs ?? 3 * deadlineMs + LEASE_MARGIN_MS;
    if (this.leaseMs < 2 * deadlineMs + LEASE_MARGIN_MS) {
      throw new RangeError(
        `leaseMs (${this.leaseMs}) must cover a query and a send (2 × ${deadlineMs}) + ${LEASE_MARGIN_MS}`,
      );
    }
    const backoff = { ...defaultRefundRetryBackoff, ...options.backoff };
    this.#policy = new BackoffPolicy({ ...backoff, jitter: "equal", random: options.random });
    // Rounds back to back while refunds are due (a round that claimed any may have left more).
    this.#loop = new BackgroundLoop({
      name: `refund retrier ${this.owner}`,
      round: async () => (await this.runOnce()) > 0,
      idleMs: options.pollIntervalMs ?? 1_000,
      failureBackoff: loopFailureBackoff(options.random),
      onError: (error) => this.#o.onError?.(error),
    });
  }

  /** One round: claims up to maxBatch stuck refunds and settles or postpones each; returns how many. */
  async runOnce(): Promise<number> {
    const claimed = await claimDueRefunds(this.#o.db, {
      owner: this.owner,
      nowMs: this.#o.clock.nowMs(),
      leaseMs: this.leaseMs,
      maxBatch: this.#o.maxBatch ?? 8,
    });
    await Promise.all(claimed.map((refund) => this.#retry(refund)));
    return claimed.length;
  }

  async #retry(refund: Refund): Promise<void> {
    const startMs = this.#o.clock.monotonicMs();
    const log = this.#o.log?.child({ correlationId: refund.acquirerKey, refundId: refund.id.toString() });
    let outcome: RefundRetryOutcome = "error";
    try {
      const decision = await this.#decide(refund);
      await this.#persist(refund, decision);
      outcome = OUTCOME_OF[decision.action];
      const line = { outcome, attempts: "attempts" in decision ? decision.attempts : refund.attempts };
      if (decision.action === "give-up")
        log?.warn({ ...line, failure: decision.failure }, "refund unresolved");
      else
        log?.info(
          decision.action === "retry" ? { ...line, reason: decision.reason } : line,
          "refund retried",
        );
    } catch (error) {
      // A lost lease is normal (another worker or the client's retry holds the refund now).
      if (paymentErrors.is(error, "PAYMENTS_REFUND_LEASE_LOST")) log?.debug({}, "refund lease lost");
      else if (log !== undefined) log.error({ err: error }, "refund retry failed; retried after its lease");
      else this.#o.onError?.(error);
    } finally {
      this.#o.observer?.refundRetried(outcome, (this.#o.clock.monotonicMs() - startMs) / 1000);
    }
  }

  /** Query by key first; send (same key) only when the acquirer has never seen it. */
  async #decide(refund: Refund): Promise<RefundRetryDecision> {
    const ctx = {
      attempts: refund.attempts,
      elapsedMs: Math.max(0, this.#o.clock.nowMs() - refund.createdAt.getTime()),
      policy: this.#policy,
    };
    const acquirer = this.#o.acquirer;
    const queried = await acquirer.queryRefundByKey(refund.acquirerKey, refund.acquirerKey);
    const decision = decideRefundRetry("query", queried, ctx);
    if (decision.action !== "send") return decision;
    const payment = await findPayment(this.#o.db, refund.merchantId, refund.paymentId);
    const authorizationId = payment?.authorizationId ?? null;
    if (authorizationId === null) throw new Error(`refund ${refund.id}: its payment has no authorization`);
    const sent = await acquirer.refund(authorizationId, {
      idempotencyKey: refund.acquirerKey,
      amountMinor: refund.amountMinor,
      correlationId: refund.acquirerKey,
    });
    return decideRefundRetry("send", sent, ctx);
  }

  async #persist(refund: Refund, decision: RefundRetryDecision): Promise<void> {
    const nowMs = this.#o.clock.nowMs();
    const owner = this.owner;
    switch (decision.action) {
      case "complete":
      case "fail":
        await this.#o.db.transaction(async (tx) => {
          // The payment row first: the lock order every refund writer follows.
          const payment = await lockPayment(tx, refund.merchantId, refund.paymentId);
          if (decision.action === "complete")
            await completeRefund(tx, refund, payment, { acquirerRefundId: decision.refundId, nowMs, owner });
          else await failRefund(tx, refund, { failure: decision.failure, nowMs, owner });
        });
        return;
      case "retry":
        await postponeRefund(this.#o.db, refund, {
          attempts: decision.attempts,
          nextAttemptAtMs: nowMs + decision.delayMs,
          nowMs,
          owner,
        });
        return;
      case "give-up":
        await giveUpRefund(this.#o.db, refund, {
          attempts: decision.attempts,
          failure: decision.failure,
          nowMs,
          owner,
        });
        return;
      case "send":
        throw new Error("refund retry: a send decision is never persisted");
    }
  }

  /**
   * Starts the loop: rounds back to back while refunds are due, a pause when none is; after rounds
   * that failed (the database unreachable) the pause grows, up to LOOP_BACKOFF_CAP_MS. A second
   * start() while running does nothing.
   */
  start(): void {
    if (!this.#loop.running) this.#loop.start();
  }

  /** Stops claiming and waits for the refunds in hand to be settled or postponed (graceful shutdown). */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }
}
