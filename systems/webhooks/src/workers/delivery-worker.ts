/**
 * The delivery worker (issue 4; WH-01, WH-04, WH-10, WH-11, WH-15, WH-16, WH-18, WH-20,
 * WH-21, WH-23, WH-24): claim → check → sign → send → record, in a loop, with a bound on
 * everything in between.
 *
 * - **Claim, fairly.** A claim round splits the free room of this process's window among
 *   tenants with due work by weight (tenant-claimer.ts: weighted DRR over
 *   `dueCountsByTenant`, then `claimDueForTenant` per tenant: SKIP LOCKED + lease +
 *   version CAS). Inside the window, the FairScheduler orders sends: DRR across tenants,
 *   round robin across a tenant's endpoints, each endpoint with its concurrency and rate
 *   limit, and Retry-After holds; no tenant holds more than maxInFlightPerTenant send
 *   slots and no more than three quarters of the window, because fair ORDER alone does
 *   not help a tenant when every slot is held by another tenant's slow requests, or the
 *   window is full of another tenant's backlog (it would wait up to one response time for
 *   a slot, or for the next claim). The window holds at most 2 × maxInFlight deliveries,
 *   so leases are not spent waiting; the store stays the queue of record.
 * - **Check.** Just before sending, `loadForSend`'s rules (batched with the other sends of
 *   the moment, send-check.ts) re-read the subscription and the payload under the lease: inactive → cancelled, past the deadline or payload gone →
 *   expired, nothing sent (WH-04, WH-18). The lease must still cover a whole request
 *   (deadline + headroom) or it is renewed first; a lost lease means another worker owns
 *   the delivery, and this one walks away.
 * - **Sign and send** with every live secret (a rotation's overlap signs twice), the
 *   event's stable id as `webhook-id` (WH-14), the sender's SSRF guard and phase timeouts,
 *   and a whole-request deadline (send-attempt.ts).
 * - **Record** the attempt and the core's decision (delivery-outcome.ts) as one CAS on the
 *   lease version, group-committed with the other results of the moment (kit group-commit.ts).
 *   A lost CAS drops the result: the new owner decides. Before it, the endpoint's status
 *   (active, failing) and client-error streak are updated when the attempt changes them
 *   (store/endpoint-health.ts). 410 disables the subscription; quarantine (client errors
 *   persisting ≥ 1 h; DNS and network failures never) disables it too, each with a
 *   `webhook.subscription.*` event to the tenant in the same transaction, so queued deliveries to
 *   it are cancelled by their re-check instead of hammering it. Retry-After holds the
 *   endpoint: in memory when the lease can cover the wait, else the endpoint's claimed
 *   deliveries go back to the store due at the hold's end.
 * - **Retry budget** (WH-20): a retry is sent only while retries stay under a fraction of
 *   all attempts (domain/retry-budget.ts); otherwise it goes back to the store, deferred
 *   by about as long as the budget needs to admit the retries turned down before it
 *   (domain/retry-pacer.ts), and first attempts — new work — keep flowing.
 * - **Database failures** strand claims: a re-check, renewal, deferral or record that fails
 *   with SQL_UNAVAILABLE leaves its delivery leased to this worker. Each such claim is
 *   remembered (at most the window) and given back first thing in the next round that
 *   reaches the database, due now, by a lease-version CAS (stranded-claims.ts), instead of
 *   waiting out its lease; a send whose record was lost goes again, same webhook-id (WH-14).
 * - **Stop** drains: no new claim, in-flight sends finish and are recorded (each bounded by
 *   the request deadline), claimed-but-unsent deliveries are released, due at once.
 *
 * Decisions (leases, deadlines, retry times) use the injected clock; pacing (poll sleeps)
 * is real time, as timers are. `runOnce` runs one round to completion, for tests that drive
 * a ManualClock.
 *
 * @example
 * const worker = new DeliveryWorker({ db, clock: systemClock, random: systemRandom, workerId: "w-1",
 *   sender: new HttpSender({ policy }), httpDeadlineMs: 30_000, leaseMs: 45_000, maxInFlight: 64,
 *   pollIntervalMs: 250, metrics: createWorkerMetrics(service.registry), log: (o, m) => service.log.info(o, m) });
 * worker.start();
 * // on SIGTERM:
 * await worker.stop();
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
import { FairScheduler, type Lease } from "../domain/fair-scheduler.ts";
import { BUDGET_WINDOW_MS_DEFAULT, RetryBudget } from "../domain/retry-budget.ts";
import { RetryPacer } from "../domain/retry-pacer.ts";
import { RetryPolicy } from "../domain/retry-policy.ts";
import { SIGNATURES_MAX, secretKey } from "../domain/signature.ts";
import type { RandomBytes } from "../domain/store-ids.ts";
import { webhookBody } from "../domain/webhook-body.ts";
import type { WorkerMetrics } from "../metrics.ts";
import {
  type ClaimedDelivery,
  checkLease,
  type DeliveryLease,
  LEASE_HEADROOM_MS,
  MAX_CLAIM_LIMIT,
  releaseLease,
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
import { EndpointLimitsCache } from "./endpoint-limits-cache.ts";
import { QueueGauges } from "./queue-gauges.ts";
import { DEADLINE_RESPONSE_CLASS, type SentAttempt, sendAttempt } from "./send-attempt.ts";
import { StrandedClaims } from "./stranded-claims.ts";
import { TenantClaimer } from "./tenant-claimer.ts";

export interface RetryBudgetSettings {
  /** Most retries as a fraction of attempts, in (0, 1). Default 0.2. */
  retryFraction: number;
  windowMs?: number;
  /** Retries per second allowed even with no new work. Default 1. */
  minRetriesPerS?: number;
}

export interface DeliveryWorkerOptions {
  db: Database;
  clock: Clock;
  random: RandomSource;
  /**
   * Lease owner and attempts.worker_id, 1..200 characters: unique per live worker. After a
   * claim round the database failed, the worker gives back every lease held under this id that
   * it does not hold itself — another worker sharing the id would lose its live leases.
   */
  workerId: string;
  sender: HttpSender;
  /** Bound on one whole request; the sender's phase timeouts should add up to no more. */
  httpDeadlineMs: number;
  /** Claim lease; at least httpDeadlineMs + LEASE_HEADROOM_MS (checkLease). */
  leaseMs: number;
  /** Sends (and their result writes) at once in this process, 1..MAX_IN_FLIGHT. */
  maxInFlight: number;
  /**
   * Sends at once for one tenant. Default: all but a quarter of maxInFlight, so slots held by
   * one tenant's slow endpoints always leave room for the others (WH-15 per-tenant limits).
   * Claimed-but-unsent deliveries are bounded the same way (a quarter of the window).
   */
  maxInFlightPerTenant?: number;
  /** Wait before the next claim when nothing more was due, in ms. */
  pollIntervalMs: number;
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
  /** Oldest-queued-age gauge refresh, in ms. Default 15 000. */
  queueAgeRefreshMs?: number;
  /** Per-state delivery counts refresh (a table scan), in ms. Default 60 000. */
  stateCountsRefreshMs?: number;
}

export const MAX_IN_FLIGHT = 10_000;
/** Claimed deliveries per send slot: enough to keep slots busy between claim rounds. */
export const WINDOW_PER_SLOT = 2;
/** Longest wait after failed claim rounds (the database is down): doubling from pollIntervalMs. */
export const CLAIM_ERROR_BACKOFF_MS_MAX = 5_000;
const LIMITS_TTL_MS = 30_000;
const LIMITS_MAX = 10_000;
const HOLDS_MAX = 10_000;
const WORKER_ID_MAX_CHARS = 200;

/** "given_back": the round only gave stranded claims back (the window wanted no claim). */
type ClaimOutcome = "full" | "exhausted" | "failed" | "given_back";

/** How far one delivery got: a failure before it was settled strands its claim. */
interface DeliveryStep {
  /** Its lease-version CAS write answered (won or lost): nothing left to give back. */
  settled: boolean;
  /** The deferral that failed was for this time (a hold, the retry budget). */
  deferUntilMs?: number;
}
type Log = (obj: Record<string, unknown>, msg: string) => void;

function positiveInt(name: string, value: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max)
    throw new RangeError(`${name} must be an integer in 1..${max}, got ${value}`);
  return value;
}

/** The store's next state for the core's decision. */
function storeOutcome(outcome: CoreOutcome): DeliveryOutcome {
  if (outcome.state === "succeeded") return { state: "succeeded" };
  if (outcome.state === "retrying") return { state: "pending", nextAttemptAtMs: outcome.nextAttemptAtMs! };
  return { state: outcome.state, reason: outcome.reason };
}

/** Secrets that can sign (malformed ones would throw inside the sender), at most SIGNATURES_MAX. */
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
  return usable.slice(0, SIGNATURES_MAX);
}

export class DeliveryWorker {
  readonly #o: DeliveryWorkerOptions;
  readonly #log: Log;
  readonly #policy: RetryPolicy;
  readonly #budget: RetryBudget | undefined;
  readonly #pacer: RetryPacer;
  readonly #holds = new EndpointHolds({ maxEndpoints: HOLDS_MAX });
  readonly #claimer: TenantClaimer;
  readonly #limits: EndpointLimitsCache;
  readonly #attempts: Batcher<AttemptResult, AttemptWrite>;
  readonly #deferrals: Batcher<Deferral, DeferralWrite>;
  readonly #checks: Batcher<DeliveryLease, SendPlan>;
  readonly #gauges: QueueGauges | undefined;
  readonly #maxQueued: number;
  readonly #maxInFlightPerTenant: number;
  readonly #maxQueuedPerTenant: number;
  #scheduler!: FairScheduler<ClaimedDelivery>;
  #weights = new Map<string, number>();
  /** Claimed, not yet picked: released on stop. */
  readonly #unpicked = new Map<string, ClaimedDelivery>();
  /** Picked and not yet done (sending, or its writes). */
  readonly #sending = new Set<string>();
  /** Claims a database failure left leased to this worker: given back next round. */
  readonly #stranded: StrandedClaims;
  readonly #inflight = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;

  constructor(o: DeliveryWorkerOptions) {
    checkLease(o.leaseMs, o.httpDeadlineMs);
    positiveInt("maxInFlight", o.maxInFlight, MAX_IN_FLIGHT);
    positiveInt("pollIntervalMs", o.pollIntervalMs, 60_000);
    if (o.workerId.length < 1 || o.workerId.length > WORKER_ID_MAX_CHARS)
      throw new RangeError(`workerId must be 1..${WORKER_ID_MAX_CHARS} characters`);
    this.#o = o;
    this.#log = o.log ?? (() => {});
    this.#policy = o.retryPolicy ?? new RetryPolicy({ random: o.random });
    if (o.quarantine !== undefined) checkQuarantineBounds(o.quarantine);
    const budget = o.retryBudget ?? { retryFraction: 0.2 };
    this.#budget =
      budget === false ? undefined : new RetryBudget({ ...budget, nowMs: o.clock.monotonicMs() });
    this.#pacer = new RetryPacer({
      windowMs: this.#budget?.windowMs ?? BUDGET_WINDOW_MS_DEFAULT,
      random: o.random,
    });
    this.#maxQueued = Math.min(o.maxInFlight * WINDOW_PER_SLOT, MAX_CLAIM_LIMIT * WINDOW_PER_SLOT);
    // A quarter of the window (and of the send slots) stays free of any one tenant.
    this.#maxQueuedPerTenant = Math.max(1, this.#maxQueued - Math.floor(this.#maxQueued / 4));
    this.#maxInFlightPerTenant = positiveInt(
      "maxInFlightPerTenant",
      o.maxInFlightPerTenant ?? Math.max(1, o.maxInFlight - Math.floor(o.maxInFlight / 4)),
      o.maxInFlight,
    );
    this.#claimer = new TenantClaimer(o.db, o);
    this.#stranded = new StrandedClaims(o.db, { workerId: o.workerId, max: this.#maxQueued });
    this.#limits = new EndpointLimitsCache(o.db, {
      clock: o.clock,
      ttlMs: LIMITS_TTL_MS,
      maxEntries: LIMITS_MAX,
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
    this.#gauges =
      o.metrics &&
      new QueueGauges(o.db, o.metrics, {
        clock: o.clock,
        ageRefreshMs: o.queueAgeRefreshMs ?? 15_000,
        countsRefreshMs: o.stateCountsRefreshMs ?? 60_000,
        onError: (err) => this.#log({ err }, "delivery worker: queue gauges refresh failed"),
      });
    this.#resetWindow();
  }

  /** Starts the background loop. */
  start(): void {
    if (this.#loop !== undefined) throw new Error("delivery worker already started");
    this.#stopping = false;
    this.#loop = this.#run();
  }

  /** Stops claiming, drains in-flight sends and their writes, and releases unsent claims. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#loop;
    this.#loop = undefined;
    await this.#drainInFlight();
    await this.#releaseUnpicked();
    await this.#giveBackOnStop();
    await this.#gauges?.settled();
  }

  /**
   * One round, to completion: claim what is due now, send everything sendable now, record
   * it all. For tests on a ManualClock; not to be mixed with `start()`.
   *
   * @example
   * while ((await worker.runOnce()).claimed > 0) {} // deliver what is due now
   */
  async runOnce(): Promise<{ claimed: number }> {
    if (this.#loop !== undefined) throw new Error("runOnce() on a started worker");
    const claimed = await this.#claimRound();
    await this.#drainInFlight(true);
    return { claimed };
  }

  /** Deliveries claimed and not yet started, and sends in flight, in this process. */
  get load(): { queued: number; inFlight: number } {
    return { queued: this.#unpicked.size, inFlight: this.#inflight.size };
  }

  #resetWindow(): void {
    this.#scheduler = new FairScheduler<ClaimedDelivery>({
      clock: this.#o.clock,
      maxQueuedTotal: this.#maxQueued,
      maxQueuedPerTenant: this.#maxQueuedPerTenant,
      maxInFlightPerTenant: this.#maxInFlightPerTenant,
      weightOf: (tenantId) => this.#weights.get(tenantId) ?? 1,
      limitsOf: (endpointId) => this.#limits.limitsOf(endpointId),
    });
    this.#unpicked.clear();
  }

  async #run(): Promise<void> {
    let nextClaimAt = 0;
    let failures = 0;
    while (!this.#stopping) {
      if (performance.now() >= nextClaimAt && this.#wantsRound()) {
        const outcome = await this.#claimRoundSafely();
        failures = outcome === "failed" ? failures + 1 : 0;
        nextClaimAt = performance.now() + this.#claimPauseMs(outcome, failures);
      }
      if (this.#stopping) break;
      this.#pump();
      this.#gauges?.refreshIfDue();
      await this.#sleep(this.#sleepMs(nextClaimAt));
    }
  }

  #claimPauseMs(outcome: ClaimOutcome, failures: number): number {
    if (outcome === "full" || outcome === "given_back") return 0;
    if (outcome === "exhausted") return this.#o.pollIntervalMs;
    return Math.min(CLAIM_ERROR_BACKOFF_MS_MAX, this.#o.pollIntervalMs * 2 ** Math.min(failures, 16));
  }

  /** Until the next claim is allowed, a parked endpoint is ready, or (at most) one poll interval. */
  #sleepMs(nextClaimAt: number): number {
    let ms = this.#o.pollIntervalMs;
    if (this.#wantsRound()) ms = Math.min(ms, nextClaimAt - performance.now());
    // A parked endpoint's time matters only when a slot is free to send to it.
    const readyAt = this.#inflight.size < this.#o.maxInFlight ? this.#scheduler.nextReadyAtMs() : undefined;
    if (readyAt !== undefined) ms = Math.min(ms, readyAt - this.#o.clock.monotonicMs());
    return Math.max(0, ms);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  #room(): number {
    const { queued, inFlight } = this.#scheduler.stats();
    return this.#maxQueued - queued - inFlight;
  }

  /** What `tenantId` may still claim: its share of the window is all but a quarter of it. */
  #tenantRoom(tenantId: string): number {
    const held = this.#scheduler.tenantStats(tenantId);
    return this.#maxQueuedPerTenant - (held === undefined ? 0 : held.queued + held.inFlight);
  }

  /** Claim in batches (an eighth of the window) unless the window ran empty. */
  #wantsClaim(): boolean {
    const room = this.#room();
    const empty = this.#unpicked.size === 0 && this.#inflight.size === 0;
    return room > 0 && (empty || room >= Math.ceil(this.#maxQueued / 8));
  }

  /** A claim round is due when the window wants one, or stranded claims wait to be given back. */
  #wantsRound(): boolean {
    return this.#stranded.owed || this.#wantsClaim();
  }

  async #claimRoundSafely(): Promise<ClaimOutcome> {
    try {
      await this.#giveBackStranded();
      if (!this.#wantsClaim()) return "given_back";
      const room = this.#room();
      const claimed = await this.#claim();
      return claimed >= room ? "full" : "exhausted";
    } catch (err) {
      this.#log({ err }, "delivery worker: claim round failed; retrying after a pause");
      return "failed";
    }
  }

  async #claimRound(): Promise<number> {
    await this.#giveBackStranded();
    return this.#claim();
  }

  async #claim(): Promise<number> {
    try {
      const round = await this.#claimer.claim(this.#room(), (tenantId) => this.#tenantRoom(tenantId));
      if (round.weights.size > 0) this.#weights = round.weights;
      try {
        await this.#limits.load(round.claimed.map((c) => c.subscriptionId));
      } catch (err) {
        this.#log({ err }, "delivery worker: endpoint limits unreadable; using defaults this round");
      }
      for (const claimed of round.claimed) await this.#enqueue(claimed);
      return round.claimed.length;
    } catch (err) {
      // A claim whose answer was lost, or a round cut short, may have leased rows this worker never saw.
      this.#stranded.claimFailed();
      throw err;
    }
  }

  /** First thing in a round: what a database failure stranded goes back; throws while it is still down. */
  async #giveBackStranded(): Promise<void> {
    if (!this.#stranded.owed) return;
    const back = await this.#stranded.giveBack(this.#o.clock.nowMs(), () => [
      ...this.#unpicked.keys(),
      ...this.#sending,
    ]);
    this.#log({ ...back }, "delivery worker: gave back the claims a database failure stranded");
  }

  async #giveBackOnStop(): Promise<void> {
    try {
      await this.#giveBackStranded();
    } catch (err) {
      this.#log({ err }, "delivery worker: stranded claims not given back; their leases will expire");
    }
  }

  async #enqueue(claimed: ClaimedDelivery): Promise<void> {
    try {
      this.#scheduler.enqueue({
        tenantId: claimed.tenantId,
        endpointId: claimed.subscriptionId,
        item: claimed,
      });
      this.#unpicked.set(claimed.deliveryId, claimed);
    } catch (err) {
      // The window is sized before claiming, so this is the endpoint bound: hand it back.
      this.#log({ err, deliveryId: claimed.deliveryId }, "delivery worker: window full; claim released");
      await releaseLease(this.#o.db, claimed, this.#o.clock.nowMs());
    }
  }

  /** Starts sends up to maxInFlight, in the scheduler's order. */
  #pump(): void {
    while (this.#inflight.size < this.#o.maxInFlight) {
      const lease = this.#scheduler.pick();
      if (lease === undefined) break;
      this.#unpicked.delete(lease.item.deliveryId);
      this.#sending.add(lease.item.deliveryId);
      const running: Promise<void> = this.#process(lease).finally(() => {
        this.#inflight.delete(running);
        this.#wake?.();
      });
      this.#inflight.add(running);
    }
    this.#o.metrics?.inFlight.set(this.#inflight.size);
    this.#o.metrics?.queued.set(this.#unpicked.size);
  }

  /** Waits for every send in flight; with `pump`, keeps starting sendable ones until none is left. */
  async #drainInFlight(pump = false): Promise<void> {
    for (;;) {
      if (pump) this.#pump();
      if (this.#inflight.size === 0) break;
      await Promise.race(this.#inflight);
    }
    await this.#checks.drain();
    await this.#attempts.drain();
    await this.#deferrals.drain();
  }

  async #releaseUnpicked(): Promise<void> {
    const nowMs = this.#o.clock.nowMs();
    for (const claimed of this.#unpicked.values()) {
      try {
        await releaseLease(this.#o.db, claimed, nowMs);
      } catch (err) {
        this.#log(
          { err, deliveryId: claimed.deliveryId },
          "delivery worker: release failed; the lease will expire",
        );
      }
    }
    this.#resetWindow();
  }

  async #process(lease: Lease<ClaimedDelivery>): Promise<void> {
    const claimed = lease.item;
    const step: DeliveryStep = { settled: false };
    try {
      await this.#deliver(claimed, step);
    } catch (err) {
      // The database failed mid-way: the delivery keeps its lease. Given back next round
      // (due now, or at the deferral's time) when the database answers; otherwise (a bug,
      // or past the bound) the lease expires and a later claim tries again (WH-11).
      const strand = !step.settled && sqlErrors.is(err, "SQL_UNAVAILABLE");
      const remembered = strand && this.#stranded.remember(claimed, step.deferUntilMs);
      this.#log(
        { err, deliveryId: claimed.deliveryId, givenBackNextRound: remembered },
        "delivery worker: delivery step failed",
      );
    } finally {
      this.#sending.delete(claimed.deliveryId);
      this.#scheduler.complete(lease);
    }
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
      this.#scheduler.throttle(plan.subscriptionId, clock.monotonicMs() + waitMs);
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

// The metrics factory and type are part of the worker's interface (main.ts wires both).
export { createWorkerMetrics, type WorkerMetrics } from "../metrics.ts";
