/**
 * The durable saga orchestrator (PY-05, PY-06, PY-12): any number of these run, in any number
 * of processes, over one PostgreSQL. Each loop claims due sagas (`FOR UPDATE SKIP LOCKED` + a
 * lease + a version fence, payment-repository.ts), performs the persisted step against the
 * acquirer, feeds the outcome to the pure state machine (payment-saga.ts) and commits the
 * decision with its ledger action and idempotency record in one transaction — by default the
 * steps that finish at about the same time share one (store/saga-step-group.ts, issue 14), and a
 * step the group does not take commits in its own.
 *
 * A process killed mid-step leaves its lease to expire; the next claimer resumes from the
 * persisted step, and an `authorize` whose outcome died with the process is resolved by a
 * status query first (resumeStep), so nothing is charged twice. The lease is always longer
 * than one acquirer call's deadline (checked at construction), so a live owner never loses
 * its claim mid-call.
 *
 * A live process that lost the DATABASE mid-step (the step's commit failed, or a claim committed
 * but its answer was lost) holds leases nobody works on. It knows which: it tracks the sagas its
 * drives hold (a Map by id holding the claim, so a finished drive never unlists a newer claim of
 * the same id), and once it has seen the database fail, each round also takes back its own
 * leases granted up to that failure that no drive holds (claimDue's `reclaimOwn`), at once
 * instead of after the lease. Leases granted later are spared: the API creates a payment
 * already leased to this owner and starts its drive only once the commit returns. A saga taken
 * back is `takenOver`, so a pending authorization is asked about by key first (PY-06).
 *
 * Every step reports its duration and outcome to an optional observer (metrics.ts), and
 * every line logged for a payment carries `correlationId` = its acquirer key (PY-17).
 *
 * @example
 * const orchestrator = new SagaOrchestrator({ db, acquirer, idempotency, clock: systemClock, random: systemRandom, owner: "w1" });
 * orchestrator.start();
 * await orchestrator.stop();
 */
import type { Logger } from "@casebook/infra/http/logger";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { BackoffPolicy } from "@casebook/kit/backoff";
import type { Clock } from "@casebook/kit/clock";
import type { GroupCommitStats } from "@casebook/kit/group-commit";
import { LeaseRenewal, RENEWALS_PER_LEASE } from "@casebook/kit/lease-renewal";
import type { RandomSource } from "@casebook/kit/random";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import {
  decide,
  resumeStep,
  type SagaDecision,
  type SagaStep,
  type StepOutcome,
} from "../domain/payment-saga.ts";
import { idempotencyErrors, paymentErrors } from "../errors.ts";
import { eventOf, type PaymentEventSink } from "../store/payment-events.ts";
import {
  applyDecision,
  type ClaimedPayment,
  claimDue,
  claimPayment,
  idemGenerationOf,
  keepsClaim,
  MIN_LEASE_MS,
  type Payment,
  renewSagaLease,
} from "../store/payment-repository.ts";
import { type SagaStepGroup, sagaStepGroup } from "../store/saga-step-group.ts";
import type { GroupTuning } from "../store/transaction-group.ts";
import { loopFailureBackoff } from "./loop-backoff.ts";

/** Told of every step driven: the step, the acquirer's outcome kind ("error" if it threw) and the duration. */
export interface SagaStepObserver {
  stepFinished(step: SagaStep, outcome: string, seconds: number): void;
}

export interface SagaBackoff {
  baseMs: number;
  capMs: number;
  /** How long the authorize step keeps retrying an unavailable acquirer before failing the payment. */
  budgetMs: number;
  maxAttempts: number;
}

export interface SagaOrchestratorOptions {
  db: Database;
  acquirer: AcquirerClient;
  idempotency: IdempotencyStore;
  clock: Clock;
  random: RandomSource;
  /** Unique per process/loop: the lease owner written on claimed rows. */
  owner: string;
  /**
   * Claim duration, renewed every third of it while a step's acquirer call runs, so a crashed
   * orchestrator's sagas come back within one lease. Default DEFAULT_SAGA_LEASE_MS (5 s).
   */
  leaseMs?: number;
  /** Sagas claimed per round. Default 16. */
  maxBatch?: number;
  /** Pause between rounds that found nothing due; after failed rounds it doubles up to LOOP_BACKOFF_CAP_MS. Default 100. */
  pollIntervalMs?: number;
  /** Steps one claim drives before yielding the saga back. Default 8. */
  maxStepsPerClaim?: number;
  backoff?: Partial<SagaBackoff>;
  /** PY-11: where finished sagas' events go, in the commit that finished them. Default: none written. */
  events?: PaymentEventSink;
  /**
   * Steps committed together (store/saga-step-group.ts: batch size, wait, lanes); `false` commits
   * each step in its own transaction. Default on, with TRANSACTION_GROUP_DEFAULTS.
   */
  stepGroup?: GroupTuning | false;
  /** Loop errors; a saga's own failures go here too unless `log` is set (then they are logged with its correlation id). */
  onError?: (error: unknown) => void;
  observer?: SagaStepObserver;
  /** A line per step (info) and per failed step (error), each with the payment's correlationId. */
  log?: Logger;
}

/** Margin between the acquirer deadline and an unrenewed lease: the commit after the call must fit too. */
export const LEASE_MARGIN_MS = 1_000;
/** The saga's claim lease when none is configured (PAYMENTS_CLAIM_LEASE_MS): ≤ 5 s, renewed while a step runs. */
export const DEFAULT_SAGA_LEASE_MS = 5_000;

/** Re-reads of the idempotency generation when a client retry took the key over mid-step. */
const LOCK_LOST_RETRIES = 3;

export const defaultSagaBackoff: Readonly<SagaBackoff> = Object.freeze({
  baseMs: 200,
  capMs: 30_000,
  budgetMs: 3_600_000,
  maxAttempts: 1_000,
});

export class SagaOrchestrator {
  readonly owner: string;
  readonly leaseMs: number;
  /**
   * A lease that is never renewed (a refund's own acquirer call holds its row this long): it
   * must outlive one call, every try included, and its commit.
   */
  readonly unrenewedLeaseMs: number;
  readonly #o: SagaOrchestratorOptions;
  readonly #policy: BackoffPolicy;
  readonly #group: SagaStepGroup | undefined;
  readonly #loop: BackgroundLoop;
  /** The claims this orchestrator's drives hold now, by payment id: its other leases are stranded. */
  readonly #driving = new Map<bigint, ClaimedPayment>();
  /** When it last saw the database fail: its own leases granted up to then may be stranded. */
  #databaseFailedAtMs: number | undefined;

  constructor(options: SagaOrchestratorOptions) {
    this.#o = options;
    this.owner = options.owner;
    this.leaseMs = options.leaseMs ?? DEFAULT_SAGA_LEASE_MS;
    if (!(this.leaseMs >= MIN_LEASE_MS)) {
      throw new RangeError(`leaseMs (${this.leaseMs}) must be at least ${MIN_LEASE_MS} ms`);
    }
    this.unrenewedLeaseMs = options.acquirer.callDeadlineMs + LEASE_MARGIN_MS;
    const backoff = { ...defaultSagaBackoff, ...options.backoff };
    this.#policy = new BackoffPolicy({ ...backoff, jitter: "equal", random: options.random });
    this.#group =
      options.stepGroup === false
        ? undefined
        : sagaStepGroup(options.db, {
            ...options.stepGroup,
            owner: this.owner,
            leaseMs: this.leaseMs,
            clock: options.clock,
            idempotency: options.idempotency,
            ...(options.events === undefined ? {} : { events: options.events }),
          });
    // Rounds back to back while sagas are due (a round that claimed any may have left more).
    this.#loop = new BackgroundLoop({
      name: `saga orchestrator ${this.owner}`,
      round: async () => (await this.runOnce()) > 0,
      idleMs: options.pollIntervalMs ?? 100,
      failureBackoff: loopFailureBackoff(options.random),
      onError: (error) => this.#report(error),
    });
  }

  /** Sagas a drive of this orchestrator holds right now. */
  get drivingCount(): number {
    return this.#driving.size;
  }

  /**
   * One round: claims up to maxBatch due sagas — its own stranded ones included, once the
   * database has failed — and drives each; returns how many it claimed.
   */
  async runOnce(): Promise<number> {
    const claimed = await claimDue(this.#o.db, {
      owner: this.owner,
      nowMs: this.#o.clock.nowMs(),
      leaseMs: this.leaseMs,
      maxBatch: this.#o.maxBatch ?? 16,
      ...(this.#databaseFailedAtMs === undefined
        ? {}
        : { reclaimOwn: { exceptIds: [...this.#driving.keys()], leasedUpToMs: this.#databaseFailedAtMs } }),
    }).catch((error: unknown) => this.#noteFailure(error));
    // With a logger, drive() has already logged a saga's failure with its correlation id.
    const failed = (error: unknown) => (this.#o.log === undefined ? this.#report(error) : undefined);
    await Promise.all(claimed.map((payment) => this.drive(payment).catch(failed)));
    return claimed.length;
  }

  /**
   * Claims payment `id` if nobody holds it (or this owner does) and drives it: the API's inline
   * drive. Returns the payment as last persisted, or undefined when another owner holds it.
   */
  async driveById(id: bigint): Promise<Payment | undefined> {
    const claimed = await claimPayment(this.#o.db, id, {
      owner: this.owner,
      nowMs: this.#o.clock.nowMs(),
      leaseMs: this.leaseMs,
    }).catch((error: unknown) => this.#noteFailure(error));
    return claimed === undefined ? undefined : this.drive(claimed);
  }

  /**
   * Drives a claimed saga until it finishes, has to wait, or maxStepsPerClaim steps ran. While it
   * runs the saga is listed as driven, so no round of this orchestrator takes it back.
   */
  async drive(claimed: ClaimedPayment): Promise<Payment> {
    this.#driving.set(claimed.id, claimed);
    try {
      return await this.#driveClaimed(claimed);
    } catch (error) {
      return this.#noteFailure(error);
    } finally {
      if (this.#driving.get(claimed.id) === claimed) this.#driving.delete(claimed.id);
    }
  }

  /** Remembers when the database last failed (its own leases up to then may be stranded), and rethrows. */
  #noteFailure(error: unknown): never {
    if (sqlErrors.is(error, "SQL_UNAVAILABLE")) {
      this.#databaseFailedAtMs = Math.max(this.#databaseFailedAtMs ?? 0, this.#o.clock.nowMs());
    }
    throw error;
  }

  async #driveClaimed(claimed: ClaimedPayment): Promise<Payment> {
    let payment: Payment = { ...claimed, step: resumeStep(claimed, { takenOver: claimed.takenOver }) };
    const log = this.#o.log?.child({ correlationId: claimed.acquirerKey, paymentId: claimed.id.toString() });
    for (let step = 0; step < (this.#o.maxStepsPerClaim ?? 8); step++) {
      const from = payment.step;
      const startMs = this.#o.clock.monotonicMs();
      let outcome: StepOutcome | undefined;
      try {
        outcome = await this.#performRenewing(payment);
        const next = decide(payment, outcome, {
          elapsedMs: Math.max(0, this.#o.clock.nowMs() - payment.startedAt.getTime()),
          policy: this.#policy,
        });
        payment = await this.#persist(payment, next);
        this.#stepDone(from, outcome.kind, startMs);
        log?.info(
          { step: from, outcome: outcome.kind, next: next.step, status: next.status, delayMs: next.delayMs },
          "saga step",
        );
        if (!keepsClaim(next)) break;
      } catch (error) {
        this.#stepDone(from, "error", startMs);
        // A lost lease is normal (another owner has the saga now); anything else is worth an error line.
        if (paymentErrors.is(error, "PAYMENTS_SAGA_LEASE_LOST"))
          log?.debug({ step: from }, "saga lease lost");
        else
          log?.error(
            { err: error, step: from, outcome: outcome?.kind },
            sqlErrors.is(error, "SQL_UNAVAILABLE")
              ? "saga step failed; taken back once the database answers"
              : "saga step failed; retried after its lease",
          );
        throw error;
      }
    }
    return payment;
  }

  #stepDone(step: SagaStep, outcome: string, startMs: number): void {
    this.#o.observer?.stepFinished(step, outcome, (this.#o.clock.monotonicMs() - startMs) / 1000);
  }

  /**
   * One acquirer call with the saga's lease — and the payment's idempotency claim, while its
   * original request's key is in progress — renewed every third of the lease until it answers.
   * A renewal that finds the saga taken over ends the drive: the call's outcome is not persisted
   * (the new owner asks the acquirer by key), so nothing is done twice.
   *
   * A lease that would lapse before the first renewal is renewed BEFORE the call: a create or a
   * step whose commit the database held up (a stalled link) can hand the drive a lease already
   * past, which another orchestrator may have claimed meanwhile — it would authorize the same key
   * alongside this drive. A lease that cannot be renewed (expired, or taken) ends the drive first.
   */
  async #performRenewing(p: Payment): Promise<StepOutcome> {
    const { db, clock, idempotency } = this.#o;
    const lease = { id: p.id, leaseVersion: p.leaseVersion, owner: this.owner, leaseExpiresAtMs: 0 };
    const key = { scope: p.merchantId, key: p.idempotencyKey, generation: p.idemGeneration };
    const everyMs = this.leaseMs / RENEWALS_PER_LEASE;
    const renew = async () => {
      const nowMs = clock.nowMs();
      const held = await renewSagaLease(db, lease, { nowMs, leaseMs: this.leaseMs });
      // The key is the original request's; a completed or taken-over key is simply not renewed.
      if (held) await idempotency.renew(db, key, nowMs);
      return held;
    };
    const leftMs = (p.leaseExpiresAt?.getTime() ?? 0) - clock.nowMs();
    if (leftMs < everyMs && !(await renew())) {
      throw paymentErrors.create("PAYMENTS_SAGA_LEASE_LOST", { fields: { paymentId: p.id.toString() } });
    }
    const renewal = new LeaseRenewal({
      everyMs,
      renew,
      onError: (error) =>
        this.#o.log?.warn({ err: error, paymentId: p.id.toString() }, "saga lease renewal failed"),
    });
    try {
      const outcome = await this.#perform(p);
      if (renewal.lost) {
        throw paymentErrors.create("PAYMENTS_SAGA_LEASE_LOST", { fields: { paymentId: p.id.toString() } });
      }
      return outcome;
    } finally {
      await renewal.stop();
    }
  }

  #perform(p: Payment): Promise<StepOutcome> {
    const acquirer = this.#o.acquirer;
    switch (p.step) {
      case "authorize":
        return acquirer.authorize({
          idempotencyKey: p.acquirerKey,
          merchantId: p.merchantId,
          amountMinor: p.amountMinor,
          currency: p.currency,
          cardToken: p.cardToken,
        });
      case "query":
        return acquirer.queryByKey(p.acquirerKey);
      case "capture":
        // PY-16: a partial capture sends its amount on every try; none captures all of it.
        return acquirer.capture(this.#authorizationId(p), p.acquirerKey, p.captureAmountMinor ?? undefined);
      case "void":
        return acquirer.void(this.#authorizationId(p), p.acquirerKey);
      case "done":
        throw new Error(`saga ${p.id} is done: a done saga is never claimed`);
    }
  }

  #authorizationId(p: Payment): string {
    if (p.authorizationId === null) throw new Error(`saga ${p.id} at ${p.step} has no authorization id`);
    return p.authorizationId;
  }

  /** Commits `next` with the steps of its group; alone when the group does not take it. */
  async #persist(payment: Payment, next: SagaDecision): Promise<Payment> {
    const outcome = await this.#group?.submit({ payment, next });
    if (outcome?.kind === "written") return outcome.payment;
    return this.#persistAlone(payment, next);
  }

  /** Commits `next` in its own transaction; when a client retry took the idempotency key over, re-reads its generation and retries. */
  async #persistAlone(payment: Payment, next: SagaDecision): Promise<Payment> {
    let current = payment;
    for (let round = 0; ; round++) {
      try {
        return await this.#o.db.transaction(
          async (tx) => {
            return applyDecision(tx, current, next, {
              owner: this.owner,
              nowMs: this.#o.clock.nowMs(),
              leaseMs: this.leaseMs,
              idempotency: this.#o.idempotency,
              emitFinished: (eventTx, payment) =>
                this.#o.events?.write(eventTx, [eventOf(payment)]) ?? Promise.resolve(),
            });
          },
          { isolation: "read committed" },
        );
      } catch (error) {
        if (!idempotencyErrors.is(error, "PAYMENTS_IDEMPOTENCY_LOCK_LOST") || round >= LOCK_LOST_RETRIES)
          throw error;
        const generation = await idemGenerationOf(this.#o.db, payment.id);
        current = { ...current, idemGeneration: generation ?? current.idemGeneration };
      }
    }
  }

  #report(error: unknown): void {
    // A lost lease is normal (another owner has the saga now); anything else is worth a log line.
    if (paymentErrors.is(error, "PAYMENTS_SAGA_LEASE_LOST")) return;
    this.#o.onError?.(error);
  }

  /**
   * Starts the loop: rounds back to back while work is due, a pause when none is; after rounds
   * that failed (the database unreachable) the pause grows, up to LOOP_BACKOFF_CAP_MS. A second
   * start() while running does nothing.
   */
  start(): void {
    if (!this.#loop.running) this.#loop.start();
  }

  /** Stops claiming and waits for the sagas in hand to be persisted (graceful shutdown). */
  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#group?.drain();
  }

  /** The step group's counters (groups written, steps in them), undefined when steps commit alone. */
  get stepGroupStats(): GroupCommitStats | undefined {
    return this.#group?.stats;
  }
}
