/**
 * The payments service's background loops, each started once per process and stopped by a close
 * hook of the service: the saga orchestrator, the refund retry worker, the outbox relay, the
 * idempotency pruner (PY-04), the pending-transfer expirer and the daily reconciliation (PY-10).
 * Close hooks run last-added first, and these are added after the pool's and the acquirer's, so
 * every loop stops (the saga worker persisting the sagas in hand) before the acquirer and the pool.
 *
 * @example
 * const orchestrator = startWorkers({ service, db, config, acquirer, acquirerUrl, ledger, idempotency, metrics }, tuning);
 */
import type { Service } from "@casebook/infra/http/service";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import { leaseOwnerId } from "@casebook/infra/sql/lease-owner";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { AcquirerClient, AcquirerClientOptions } from "../clients/acquirer-client.ts";
import { createEventPublisher } from "../clients/webhook-publisher.ts";
import type { PaymentsConfig } from "../config.ts";
import type { PaymentMetrics } from "../metrics.ts";
import type { LedgerRepository } from "../store/ledger-repository.ts";
import { outboxEventSink } from "../store/payment-events.ts";
import { DailyReconciliation } from "./daily-reconciliation.ts";
import { IdempotencyPruner, type IdempotencyPrunerOptions } from "./idempotency-pruner.ts";
import { OutboxRelay } from "./outbox-relay.ts";
import { PendingExpirer, type PendingExpirerOptions } from "./pending-expirer.ts";
import { RefundRetrier, type RefundRetrierOptions } from "./refund-retrier.ts";
import { SagaOrchestrator, type SagaOrchestratorOptions } from "./saga-orchestrator.ts";

/**
 * Timings a test or a bench may shorten (a SIGKILLed process's leases expire in seconds, not
 * half a minute); `main` runs with each piece's documented defaults when this is left out.
 */
export interface PaymentsTuning {
  acquirer?: Pick<
    Partial<AcquirerClientOptions>,
    "timeouts" | "callDeadlineMs" | "retryBaseMs" | "retryCapMs" | "breaker"
  >;
  saga?: Pick<Partial<SagaOrchestratorOptions>, "leaseMs" | "pollIntervalMs" | "maxBatch" | "backoff">;
  refunds?: Pick<Partial<RefundRetrierOptions>, "leaseMs" | "pollIntervalMs" | "maxBatch" | "backoff">;
  pruner?: Pick<Partial<IdempotencyPrunerOptions>, "intervalMs" | "maxBatch" | "maxBatchesPerRound">;
  expirer?: Pick<Partial<PendingExpirerOptions>, "intervalMs" | "maxBatch">;
  /** The daily reconciliation's first check after start and the pause between checks, in ms. */
  reconciliation?: { firstCheckMs?: number; checkEveryMs?: number };
}

/** What the workers run on: the adapters main.ts opened. */
export interface WorkerAdapters {
  service: Service;
  db: Database;
  config: PaymentsConfig;
  acquirer: AcquirerClient;
  acquirerUrl: string;
  ledger: LedgerRepository;
  idempotency: IdempotencyStore;
  metrics: PaymentMetrics;
}

/** The saga worker: one loop per process, a unique lease owner, stopped by the service's close. */
function startSagaWorker(adapters: WorkerAdapters, tuning: PaymentsTuning["saga"]): SagaOrchestrator {
  const { service, db, acquirer, idempotency, metrics } = adapters;
  const orchestrator = new SagaOrchestrator({
    ...tuning,
    db,
    acquirer,
    idempotency,
    clock: systemClock,
    random: systemRandom,
    owner: leaseOwnerId(),
    // PY-11: the final step's event is written to the outbox in the step's own transaction.
    events: outboxEventSink,
    onError: (error) =>
      service.log.error(
        { err: error },
        sqlErrors.is(error, "SQL_UNAVAILABLE")
          ? "saga step failed; the saga is taken back once the database answers"
          : "saga step failed; the saga is retried after its lease",
      ),
    // PY-17: step metrics, and a correlationId (the payment's acquirer key) on every saga line.
    observer: metrics,
    log: service.log,
  });
  orchestrator.start();
  // Added after the pool's and the acquirer's hooks, so it runs before them: sagas in hand are persisted first.
  service.onClose(() => orchestrator.stop());
  return orchestrator;
}

/** The refund retry worker (PY-15): one loop per process, settles refunds left pending past their delay. */
function startRefundRetrier(adapters: WorkerAdapters, tuning: PaymentsTuning["refunds"]): void {
  const { service, db, acquirer, metrics } = adapters;
  const retrier = new RefundRetrier({
    ...tuning,
    db,
    acquirer,
    clock: systemClock,
    random: systemRandom,
    owner: leaseOwnerId("refunds"),
    onError: (error) => service.log.error({ err: error }, "refund retry round failed; retrying"),
    // PY-17: a correlationId (the refund's acquirer key) on every line, rounds counted by outcome.
    observer: metrics,
    log: service.log,
  });
  retrier.start();
  service.onClose(() => retrier.stop());
}

/** The outbox relay: publishes events in order per account (to WEBHOOKS_URL when set). */
function startOutboxRelay({ service, db, config }: WorkerAdapters): void {
  const relay = new OutboxRelay(db, {
    publisher: createEventPublisher(config),
    clock: systemClock,
    random: systemRandom,
    onError: (error, orderingKey) =>
      service.log.warn({ err: error, orderingKey }, "event publish failed; retrying"),
  });
  relay.start();
  service.onClose(() => relay.stop());
}

/** PY-04: the idempotency table's TTL — keys past the retention (24 h) deleted in bounded rounds. */
function startIdempotencyPruner({ service, idempotency }: WorkerAdapters, tuning: PaymentsTuning["pruner"]) {
  const pruner = new IdempotencyPruner(idempotency, {
    ...tuning,
    random: systemRandom,
    onError: (error) => service.log.warn({ err: error }, "idempotency prune round failed; retrying"),
  });
  pruner.start();
  service.onClose(() => pruner.stop());
}

/** Pending transfers past their timeout (016) are voided, their funds released. */
function startPendingExpirer({ service, ledger }: WorkerAdapters, tuning: PaymentsTuning["expirer"]): void {
  const expirer = new PendingExpirer(ledger, {
    ...tuning,
    random: systemRandom,
    onError: (error) => service.log.warn({ err: error }, "pending expiry round failed; retrying"),
  });
  expirer.start();
  service.onClose(async () => {
    await expirer.stop();
    await ledger.drain();
  });
}

/** PY-10: yesterday's settlement file reconciled once a day. */
function startDailyReconciliation(adapters: WorkerAdapters, tuning: PaymentsTuning["reconciliation"] = {}) {
  const { service, db, config, acquirerUrl } = adapters;
  const daily = new DailyReconciliation({
    ...tuning,
    db,
    clock: systemClock,
    acquirerUrl,
    feeBps: config.acquirerFeeBps,
    log: service.log,
  });
  daily.start();
  service.onClose(() => daily.stop());
}

/** Starts every loop; the saga orchestrator is returned for the payment routes to drive sagas inline. */
export function startWorkers(adapters: WorkerAdapters, tuning: PaymentsTuning = {}): SagaOrchestrator {
  const saga = { leaseMs: adapters.config.claimLeaseMs, ...tuning.saga };
  const orchestrator = startSagaWorker(adapters, saga);
  startRefundRetrier(adapters, tuning.refunds);
  startOutboxRelay(adapters);
  startIdempotencyPruner(adapters, tuning.pruner);
  startPendingExpirer(adapters, tuning.expirer);
  startDailyReconciliation(adapters, tuning.reconciliation);
  return orchestrator;
}
