/**
 * What happens to one claimed delivery (issue 4; WH-04, WH-10, WH-11, WH-14, WH-16, WH-18,
 * WH-20, WH-23, WH-24): check → sign → send → record, each step bounded.
 *
 * - **Hold and budget first.** An endpoint held by a long Retry-After sends its claimed
 *   deliveries back to the store, due at the hold's end. A retry is sent only while retries
 *   stay under a fraction of all attempts (WH-20, domain/retry-budget.ts); otherwise it goes
 *   back, deferred by about as long as the budget needs to admit the retries turned down
 *   before it (domain/retry-pacer.ts), and first attempts — new work — keep flowing.
 * - **Check.** Just before sending, `loadForSend`'s rules (batched with the other sends of
 *   the moment, store/send-check.ts) re-read the subscription and the payload under the
 *   lease: inactive → cancelled, past the deadline or payload gone → expired, nothing sent
 *   (WH-04, WH-18). The lease must still cover a whole request (deadline + headroom) or it
 *   is renewed first; a lost lease means another worker owns the delivery, and this one
 *   walks away.
 * - **Sign and send** with every live secret (a rotation's overlap signs twice), the event's
 *   stable id as `webhook-id` (WH-14), the sender's SSRF guard and phase timeouts, and a
 *   whole-request deadline (send-attempt.ts).
 * - **Record** the attempt and the core's decision (delivery-outcome.ts) as one CAS on the
 *   lease version, group-committed with the other results of the moment (kit group-commit.ts).
 *   A lost CAS drops the result: the new owner decides. Before it, the endpoint's status
 *   (active, failing) and client-error streak are updated when the attempt changes them
 *   (store/endpoint-health.ts). 410 disables the subscription; quarantine (client errors
 *   persisting ≥ 1 h; DNS and network failures never) disables it too, each with a
 *   `webhook.subscription.*` event to the tenant in the same transaction, so queued
 *   deliveries to it are cancelled by their re-check instead of hammering it. Retry-After
 *   holds the endpoint: in the send window when the lease can cover the wait, else in
 *   `EndpointHolds` (the endpoint's claimed deliveries go back to the store).
 * - **Database failures** strand the claim (see `process`): a send whose record was lost
 *   goes again, same webhook-id (WH-14).
 *
 * @example
 * const pipeline = new DeliveryPipeline({ ...workerOptions, stranded, throttle: (id, until) => window.throttle(id, until) });
 * await pipeline.process(claimed); // never throws
 * await pipeline.drain();          // the batched writes of the moment
 */
import { randomBytes as cryptoRandomBytes } from "node:crypto";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { Clock } from "@casebook/kit/clock";
import { GroupCommit as Batcher } from "@casebook/kit/group-commit";
import type { RandomSource } from "@casebook/kit/random";
import type { HttpSender } from "../clients/http-sender.ts";
import { type DeliveryOutcome as CoreOutcome, classify, decideOutcome } from "../domain/delivery-outcome.ts";
import {
  checkQuarantineBounds,
  type EndpointStreak,
  healthSignal,
  healthWriteNeeded,
  type QuarantineBounds,
} from "../domain/endpoint-health.ts";
import { EndpointHolds } from "../domain/endpoint-holds.ts";
import { DEFAULT_BUDGET_WINDOW_MS, RetryBudget } from "../domain/retry-budget.ts";
import { RetryPacer } from "../domain/retry-pacer.ts";
import { RetryPolicy } from "../domain/retry-policy.ts";
import { MAX_SIGNATURES, secretKey } from "../domain/signature.ts";
import type { RandomBytes } from "../domain/store-ids.ts";
import { webhookBody } from "../domain/webhook-body.ts";
import type { WorkerMetrics } from "../metrics.ts";
import {
  type ClaimedDelivery,
  type DeliveryLease,
  LEASE_HEADROOM_MS,
  renewLease,
} from "../store/delivery-claims.ts";
import { type Deferral, type DeferralWrite, deferDeliveries } from "../store/delivery-deferral.ts";
import {
  type AttemptResult,
  type AttemptWrite,
  type DeliveryOutcome,
  finishWithoutAttempt,
  MAX_RESULT_BATCH,
  recordAttempts,
} from "../store/delivery-results.ts";
import { recordEndpointHealth, switchOffSubscription } from "../store/endpoint-health.ts";
import {
  loadForSendBatch,
  MAX_SEND_CHECK_BATCH,
  type SendGo,
  type SendPlan,
  type SendSkip,
} from "../store/send-check.ts";
import { DEADLINE_RESPONSE_CLASS, type SentAttempt, sendAttempt } from "./send-attempt.ts";
import type { StrandedClaims } from "./stranded-claims.ts";

export interface RetryBudgetSettings {
  /** Most retries as a fraction of attempts, in (0, 1). Default 0.2. */
  retryFraction: number;
  windowMs?: number;
  /** Retries per second allowed even with no new work. Default 1. */
  minRetriesPerS?: number;
}

export interface DeliveryPipelineOptions {
  db: Database;
  clock: Clock;
  random: RandomSource;
  sender: HttpSender;
  /** Bound on one whole request; the sender's phase timeouts should add up to no more. */
  httpDeadlineMs: number;
  /** Claim lease; at least httpDeadlineMs + LEASE_HEADROOM_MS. */
  leaseMs: number;
  /** Sends at once: bounds the batched writes waiting (one per send, plus one). */
  maxInFlight: number;
  metrics?: WorkerMetrics;
  log?: (obj: Record<string, unknown>, msg: string) => void;
  /** Backoff, deadline and attempt bound; default the seed's (2 s base, 300 s cap, equal jitter). */
  retryPolicy?: RetryPolicy;
  /** WH-20; `false` turns it off. Default { retryFraction: 0.2 }. */
  retryBudget?: RetryBudgetSettings | false;
  /** When an endpoint's client errors are persistent (endpoint-health.ts default: 5 in a row over ≥ 1 h). */
  quarantine?: QuarantineBounds;
  /** Ids of the tenant notices written on a switch-off; default node:crypto's. */
  randomBytes?: RandomBytes;
  /** Where a database failure leaves a claim, to be given back next round. */
  stranded: StrandedClaims;
  /** Holds an endpoint in the send window until a monotonic time (a Retry-After the lease covers). */
  throttle: (endpointId: string, untilMonotonicMs: number) => void;
}

const MAX_HOLDS = 10_000;

/** How far one delivery got: a failure before it was settled strands its claim. */
interface DeliveryStep {
  /** Its lease-version CAS write answered (won or lost): nothing left to give back. */
  settled: boolean;
  /** The deferral that failed was for this time (a hold, the retry budget). */
  deferUntilMs?: number;
}

/** The store's next state for the core's decision. */
function storeOutcome(outcome: CoreOutcome): DeliveryOutcome {
  if (outcome.state === "succeeded") return { state: "succeeded" };
  if (outcome.state === "retrying") return { state: "pending", nextAttemptAtMs: outcome.nextAttemptAtMs! };
  return { state: outcome.state, reason: outcome.reason };
}

/** Secrets that can sign (malformed ones would throw inside the sender), at most MAX_SIGNATURES. */
function signingSecrets(plan: SendGo): string[] {
  const usable: string[] = [];
  for (const { secret } of plan.secrets) {
    try {
      secretKey(secret);
      usable.push(secret);
    } catch {
      // A malformed stored secret signs nothing; the others still do.
    }
  }
  return usable.slice(0, MAX_SIGNATURES);
}

export class DeliveryPipeline {
  readonly #o: DeliveryPipelineOptions;
  readonly #log: (obj: Record<string, unknown>, msg: string) => void;
  readonly #policy: RetryPolicy;
  readonly #budget: RetryBudget | undefined;
  readonly #pacer: RetryPacer;
  readonly #holds = new EndpointHolds({ maxEndpoints: MAX_HOLDS });
  readonly #attempts: Batcher<AttemptResult, AttemptWrite>;
  readonly #deferrals: Batcher<Deferral, DeferralWrite>;
  readonly #checks: Batcher<DeliveryLease, SendPlan>;
  readonly #stranded: StrandedClaims;
  readonly #throttle: (endpointId: string, untilMonotonicMs: number) => void;

  constructor(o: DeliveryPipelineOptions) {
    if (o.quarantine !== undefined) checkQuarantineBounds(o.quarantine);
    this.#o = o;
    this.#log = o.log ?? (() => {});
    this.#stranded = o.stranded;
    this.#throttle = o.throttle;
    this.#policy = o.retryPolicy ?? new RetryPolicy({ random: o.random });
    const budget = o.retryBudget ?? { retryFraction: 0.2 };
    this.#budget =
      budget === false ? undefined : new RetryBudget({ ...budget, nowMs: o.clock.monotonicMs() });
    this.#pacer = new RetryPacer({
      windowMs: this.#budget?.windowMs ?? DEFAULT_BUDGET_WINDOW_MS,
      random: o.random,
    });
    const maxPending = o.maxInFlight + 1;
    this.#attempts = new Batcher((batch) => recordAttempts(o.db, batch, o.clock.nowMs()), {
      maxBatch: MAX_RESULT_BATCH,
      maxPending,
    });
    this.#deferrals = new Batcher((batch) => deferDeliveries(o.db, batch, o.clock.nowMs()), {
      maxBatch: MAX_RESULT_BATCH,
      maxPending,
    });
    // The re-check runs at the batch's own time: later than asked, never earlier (WH-04).
    this.#checks = new Batcher((batch) => loadForSendBatch(o.db, batch, o.clock.nowMs()), {
      maxBatch: MAX_SEND_CHECK_BATCH,
      maxPending,
    });
  }

  /**
   * One delivery, from the budget and hold checks to its last write. Never throws: the
   * database failing mid-way leaves the delivery leased to this worker, remembered to be
   * given back next round (due now, or at the deferral's time) when the database answers;
   * otherwise (a bug, or past the bound) the lease expires and a later claim tries again (WH-11).
   */
  async process(claimed: ClaimedDelivery): Promise<void> {
    const step: DeliveryStep = { settled: false };
    try {
      await this.#deliver(claimed, step);
    } catch (err) {
      const strand = !step.settled && sqlErrors.is(err, "SQL_UNAVAILABLE");
      const remembered = strand && this.#stranded.remember(claimed, step.deferUntilMs);
      this.#log(
        { err, deliveryId: claimed.deliveryId, givenBackNextRound: remembered },
        "delivery worker: delivery step failed",
      );
    }
  }

  /** Waits for the batched re-checks and writes of the moment. */
  async drain(): Promise<void> {
    await this.#checks.drain();
    await this.#attempts.drain();
    await this.#deferrals.drain();
  }

  async #deliver(claimed: ClaimedDelivery, step: DeliveryStep): Promise<void> {
    const { clock } = this.#o;
    const nowMs = clock.nowMs();
    const heldUntilMs = this.#holds.heldUntil(claimed.subscriptionId, nowMs);
    if (heldUntilMs !== undefined) return this.#defer(claimed, heldUntilMs, "endpoint_hold", step);
    const isRetry = claimed.attempts > 0;
    if (isRetry && this.#budget !== undefined && !this.#budget.tryRetry(clock.monotonicMs())) {
      const deferMs = this.#pacer.deferMs(clock.monotonicMs(), this.#admitPerWindow(this.#budget));
      return this.#defer(claimed, nowMs + deferMs, "retry_budget", step);
    }
    const plan = await this.#checks.submit(claimed);
    if (!plan.send) return this.#skipped(claimed, plan);
    if (!isRetry) this.#budget?.recordFirstAttempt(clock.monotonicMs());
    const lease = await this.#leaseForSend(plan.lease);
    if (lease === undefined) return this.#lost(claimed, "renew");
    const secrets = signingSecrets(plan);
    if (secrets.length === 0) return this.#withoutSecret(plan);
    // The check ran a moment ago (and a renewal may have followed): no request starts past the deadline.
    if (clock.nowMs() >= plan.deadlineAtMs) return this.#expireUnsent(plan);
    const sent = await sendAttempt(
      this.#o.sender,
      { url: plan.url, messageId: plan.eventId, body: webhookBody(plan), secrets },
      {
        clock,
        deadlineMs: this.#o.httpDeadlineMs,
        onInternalError: (err) => this.#log({ err, deliveryId: claimed.deliveryId }, "sender bug"),
      },
    );
    await this.#settle(plan, lease, sent, step);
  }

  /** Retries the budget admits per window at the current rate of first attempts. */
  #admitPerWindow(budget: RetryBudget): number {
    const { firstAttempts } = budget.window(this.#o.clock.monotonicMs());
    const floor = (budget.minRetriesPerS * budget.windowMs) / 1_000;
    return Math.floor((budget.retryFraction * firstAttempts + floor) / (1 - budget.retryFraction));
  }

  /** The lease, renewed first when what is left of it cannot cover a whole request. */
  #leaseForSend(lease: DeliveryLease): Promise<DeliveryLease | undefined> | DeliveryLease {
    const { clock, db, httpDeadlineMs, leaseMs } = this.#o;
    const nowMs = clock.nowMs();
    if (lease.leaseExpiresAtMs - nowMs >= httpDeadlineMs + LEASE_HEADROOM_MS) return lease;
    return renewLease(db, lease, { nowMs, leaseMs, httpDeadlineMs });
  }

  async #settle(plan: SendGo, lease: DeliveryLease, sent: SentAttempt, step: DeliveryStep): Promise<void> {
    const endpoint = await this.#endpointHealth(plan, sent);
    const outcome = decideOutcome({
      result: sent.result,
      attempt: plan.attemptNo,
      clientErrorStreak: plan.clientErrorStreak,
      endpoint,
      // The policy measures its deadline from creation; the store's deadline already holds
      // the tenant's window, so the policy is given the window that ends exactly there.
      createdAtMs: plan.deadlineAtMs - this.#policy.deadlineMs,
      nowMs: sent.finishedAtMs,
      policy: this.#policy,
      ...(this.#o.quarantine === undefined ? {} : { quarantine: this.#o.quarantine }),
    });
    if (outcome.throttleEndpointUntilMs !== undefined) this.#hold(plan, outcome.throttleEndpointUntilMs);
    const responseClass = sent.deadlineExceeded ? DEADLINE_RESPONSE_CLASS : outcome.responseClass;
    const write = await this.#attempts.submit({
      lease,
      startedAtMs: sent.startedAtMs,
      durationMs: sent.durationMs,
      responseClass,
      status: sent.status,
      errorPhase: sent.errorPhase,
      error: sent.error,
      clientErrorStreak: outcome.clientErrorStreak,
      next: storeOutcome(outcome),
    });
    // Recorded (or lost to a new owner): a failure from here on (disabling) strands nothing.
    step.settled = true;
    if (!write.won) return this.#lost(plan.lease, "record");
    this.#count(plan, responseClass, write, sent);
    if (outcome.subscriptionAction !== "none") await this.#disable(plan, outcome);
  }

  #count(plan: SendGo, responseClass: string, write: AttemptWrite, sent: SentAttempt): void {
    const m = this.#o.metrics;
    if (m === undefined) return;
    const tenant = m.tenantLabel(plan.tenantId);
    m.attempts.inc({ tenant, response_class: responseClass });
    if (write.state !== null && write.state !== "pending") m.finished.inc({ tenant, state: write.state });
    if (write.state === "succeeded")
      m.commitTo2xx.observe({ tenant }, Math.max(0, sent.finishedAtMs - plan.eventCreatedAtMs) / 1_000);
  }

  /**
   * Retry-After: every delivery to the endpoint waits. A wait the lease can cover stays in
   * this process's scheduler; a longer one sends claimed deliveries back to the store.
   */
  #hold(plan: SendGo, untilMs: number): void {
    const { clock, leaseMs, httpDeadlineMs } = this.#o;
    const nowMs = clock.nowMs();
    const waitMs = untilMs - nowMs;
    if (waitMs <= 0) return;
    if (waitMs <= leaseMs - httpDeadlineMs - LEASE_HEADROOM_MS)
      this.#throttle(plan.subscriptionId, clock.monotonicMs() + waitMs);
    else this.#holds.hold(plan.subscriptionId, untilMs, nowMs);
  }

  /**
   * The endpoint's status after this attempt (failing, back to active, one more client
   * error), written only when it changes; the streak it leaves is the quarantine input.
   * A write that fails strands the claim like any other (the send goes again).
   */
  async #endpointHealth(plan: SendGo, sent: SentAttempt): Promise<EndpointStreak> {
    const responseClass = classify(sent.result);
    const signal = healthSignal(responseClass);
    const none = { clientErrors: 0, clientErrorsSinceMs: null };
    if (!healthWriteNeeded(signal, plan.endpoint)) return none;
    const status = sent.status === null ? "" : ` ${sent.status}`;
    const error = sent.error === null ? "" : `: ${sent.error}`;
    const streak = await recordEndpointHealth(this.#o.db, {
      tenantId: plan.tenantId,
      subscriptionId: plan.subscriptionId,
      signal,
      reason: `${responseClass}${status}${error}`,
      nowMs: sent.finishedAtMs,
    });
    // Switched off meanwhile: nothing counts, and the re-check cancels what is queued.
    return streak ?? none;
  }

  /** 410 disables, persistent client errors quarantine: the status and the tenant's notice in one write. */
  async #disable(plan: SendGo, outcome: CoreOutcome): Promise<void> {
    const gone = outcome.subscriptionAction === "disable";
    const reason = gone ? "the endpoint answered 410 Gone" : `quarantined: ${outcome.reason}`;
    const eventId = await switchOffSubscription(this.#o.db, {
      tenantId: plan.tenantId,
      subscriptionId: plan.subscriptionId,
      status: gone ? "disabled" : "quarantined",
      reason,
      nowMs: this.#o.clock.nowMs(),
      randomBytes: this.#o.randomBytes ?? cryptoRandomBytes,
    });
    this.#holds.release(plan.subscriptionId);
    if (eventId === undefined) return; // another worker switched it off first, and told the tenant
    this.#log(
      { tenantId: plan.tenantId, subscriptionId: plan.subscriptionId, reason, eventId },
      "delivery worker: subscription disabled",
    );
  }

  async #defer(
    claimed: ClaimedDelivery,
    untilMs: number,
    reason: "endpoint_hold" | "retry_budget",
    step: DeliveryStep,
  ): Promise<void> {
    step.deferUntilMs = untilMs;
    const write = await this.#deferrals.submit({ lease: claimed, untilMs });
    if (!write.won) return this.#lost(claimed, "defer");
    const m = this.#o.metrics;
    m?.deferred.inc({ reason });
    if (write.state === "expired")
      m?.finished.inc({ tenant: m.tenantLabel(claimed.tenantId), state: "expired" });
  }

  #skipped(claimed: ClaimedDelivery, plan: SendSkip): void {
    if (!plan.settled) {
      this.#lost(claimed, "recheck");
      return;
    }
    const m = this.#o.metrics;
    m?.skipped.inc({ reason: plan.reason });
    const state = plan.reason === "subscription_inactive" ? "cancelled" : "expired";
    m?.finished.inc({ tenant: m.tenantLabel(claimed.tenantId), state });
  }

  async #withoutSecret(plan: SendGo): Promise<void> {
    const { db, clock, metrics } = this.#o;
    const end = { state: "failed" as const, reason: "no valid signing secret", nowMs: clock.nowMs() };
    if (!(await finishWithoutAttempt(db, plan.lease, end))) return this.#lost(plan.lease, "no_secret");
    const tenant = metrics?.tenantLabel(plan.tenantId) ?? plan.tenantId;
    metrics?.sendsWithoutSecret.inc({ tenant });
    metrics?.finished.inc({ tenant, state: "failed" });
    this.#log(
      { deliveryId: plan.lease.deliveryId, subscriptionId: plan.subscriptionId },
      "no valid signing secret",
    );
  }

  async #expireUnsent(plan: SendGo): Promise<void> {
    const { db, clock, metrics } = this.#o;
    const end = { state: "expired" as const, reason: "deadline_passed", nowMs: clock.nowMs() };
    if (!(await finishWithoutAttempt(db, plan.lease, end))) return this.#lost(plan.lease, "deadline");
    metrics?.skipped.inc({ reason: "deadline_passed" });
    metrics?.finished.inc({ tenant: metrics.tenantLabel(plan.tenantId), state: "expired" });
  }

  #lost(lease: DeliveryLease, stage: string): void {
    this.#o.metrics?.leaseLost.inc({ stage });
    this.#log(
      { deliveryId: lease.deliveryId, leaseVersion: String(lease.leaseVersion), stage },
      "delivery worker: lease lost; another worker owns this delivery now",
    );
  }
}
