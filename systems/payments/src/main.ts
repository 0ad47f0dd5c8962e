/**
 * Composition root of the payments service: config → database (PostgreSQL or embedded
 * PGlite) and migrations → the acquirer (ACQUIRER_URL, or the simulator in-process) →
 * HTTP API (accounts, the ledger API, payments, reconciliation exceptions) behind merchant API keys → the
 * workers (saga orchestrator, refund retrier, outbox relay, idempotency pruner, pending expirer, daily
 * reconciliation) → graceful shutdown (drain requests, stop the worker loops, then the
 * acquirer, then the pool).
 * Stateless: run as many instances as you like against one DATABASE_URL.
 *
 * @example
 * // PORT=8104 node systems/payments/src/main.ts   (npm start runs it through the casebook CLI)
 * const running = await main({ PORT: "0", CASEBOOK_DATA: tmpDir, LOG_LEVEL: "silent" });
 * // replicas on one PostgreSQL schema, with short leases for a crash test:
 * // main({ DATABASE_URL, PAYMENTS_DB_SCHEMA: "pay_test", PORT: "0" }, { saga: { leaseMs: 2_500 } })
 * running.bootstrap?.apiKey; // "sk_…": the demo merchant's key, on first start only
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme, createBearerAuth } from "@casebook/infra/http/bearer-auth";
import {
  ownUrl,
  registerScenarioRoutes,
  ScenarioRuns,
  scenarioErrors,
} from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import { leaseOwnerId } from "@casebook/infra/sql/lease-owner";
import { runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { BackgroundLoop, unrefSleep } from "@casebook/kit/background-loop";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { registerAccountRoutes } from "./api/account-routes.ts";
import { registerPaymentsAdminApi } from "./api/admin-routes.ts";
import { registerLedgerRoutes } from "./api/ledger-routes.ts";
import { registerPaymentRoutes } from "./api/payment-routes.ts";
import { registerReconciliationRoutes } from "./api/reconciliation-routes.ts";
import { registerRefundRoutes } from "./api/refund-routes.ts";
import { AcquirerClient, type AcquirerClientOptions } from "./clients/acquirer-client.ts";
import { createEventPublisher } from "./clients/webhook-publisher.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_MERCHANT,
  loadPaymentsConfig,
  type PaymentsConfig,
} from "./config.ts";
import { paymentsErrorRegistries } from "./errors.ts";
import {
  correlatePaymentRequests,
  createPaymentMetrics,
  type PaymentMetrics,
  registerBreakerGauge,
} from "./metrics.ts";
import { oneKeyScenario } from "./scenarios/one-key-scenario.ts";
import { createAcquirerSim } from "./sim/acquirer-sim.ts";
import { countOpenExceptions, countSagaBacklog, reconciliationRunExists } from "./store/backlog-counts.ts";
import { paymentsIdempotencyStore } from "./store/idempotency-keys.ts";
import { LedgerRepository } from "./store/ledger-repository.ts";
import { MerchantRepository } from "./store/merchant-repository.ts";
import { enqueue } from "./store/outbox.ts";
import { IdempotencyPruner, type IdempotencyPrunerOptions } from "./workers/idempotency-pruner.ts";
import { OutboxRelay } from "./workers/outbox-relay.ts";
import { PendingExpirer, type PendingExpirerOptions } from "./workers/pending-expirer.ts";
import { previousUtcDate, reconcileDate } from "./workers/reconciler.ts";
import { RefundRetrier, type RefundRetrierOptions } from "./workers/refund-retrier.ts";
import { SagaOrchestrator, type SagaOrchestratorOptions } from "./workers/saga-orchestrator.ts";

export const VERSION = "0.1.0";
export interface RunningPayments {
  readonly url: string;
  readonly service: Service;
  readonly db: Database;
  readonly acquirerUrl: string;
  /** The demo merchant created by THIS start (undefined when it existed already or is off). */
  readonly bootstrap: { merchantId: string; apiKey: string } | undefined;
  close(): Promise<void>;
}

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

/** ACQUIRER_URL, or an in-process simulator on a free loopback port (closed with the service). */
async function acquirerFor(config: PaymentsConfig, service: Service): Promise<string> {
  if (config.acquirerUrl !== undefined) return config.acquirerUrl;
  const sim = createAcquirerSim({ rng: systemRandom, log: { level: config.logLevel } });
  const { url } = await sim.listen({ port: 0, host: "127.0.0.1" });
  service.onClose(() => sim.close());
  service.log.info({ acquirerUrl: url }, "ACQUIRER_URL unset: acquirer simulator started in-process");
  return url;
}

async function bootstrapMerchant(config: PaymentsConfig, merchants: MerchantRepository, service: Service) {
  const id =
    config.bootstrapMerchant ??
    (config.databaseUrl === undefined ? DEFAULT_BOOTSTRAP_MERCHANT : BOOTSTRAP_OFF);
  if (id === BOOTSTRAP_OFF) return undefined;
  const created = await merchants.createIfAbsent({ id, name: `${id} (bootstrap merchant)` });
  if (!created) {
    service.log.info({ merchantId: id }, "bootstrap merchant exists; its API key was printed on first start");
    return undefined;
  }
  return { merchantId: created.merchant.id, apiKey: created.apiKey.key };
}

/** The saga worker: one loop per process, a unique lease owner, stopped by the service's close. */
function startSagaWorker(
  service: Service,
  db: Database,
  acquirer: AcquirerClient,
  idempotency: IdempotencyStore,
  metrics: PaymentMetrics,
  tuning: PaymentsTuning["saga"],
) {
  const orchestrator = new SagaOrchestrator({
    ...tuning,
    db,
    acquirer,
    idempotency,
    clock: systemClock,
    random: systemRandom,
    owner: leaseOwnerId(),
    // PY-11: the final step's event is written to the outbox in the step's own transaction.
    emitEvent: (tx, event) =>
      enqueue(tx, {
        orderingKey: event.accountKey,
        type: event.type,
        eventId: `${event.type}:${event.paymentId}`,
        payload: { ...event.payload, paymentId: event.paymentId, merchantId: event.merchantId },
      }).then(() => undefined),
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
function startRefundRetrier(
  service: Service,
  db: Database,
  acquirer: AcquirerClient,
  metrics: PaymentMetrics,
  tuning: PaymentsTuning["refunds"],
) {
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
  return retrier;
}

/** The outbox relay: publishes events in order per account (to WEBHOOKS_URL when set). */
function startOutboxRelay(service: Service, db: Database, config: PaymentsConfig): OutboxRelay {
  const relay = new OutboxRelay(db, {
    publisher: createEventPublisher(config),
    clock: systemClock,
    random: systemRandom,
    onError: (error, orderingKey) =>
      service.log.warn({ err: error, orderingKey }, "event publish failed; retrying"),
  });
  relay.start();
  service.onClose(() => relay.stop());
  return relay;
}

/** PY-04: the idempotency table's TTL — keys past the retention (24 h) deleted in bounded rounds. */
function startIdempotencyPruner(
  service: Service,
  idempotency: IdempotencyStore,
  tuning: PaymentsTuning["pruner"],
): void {
  const pruner = new IdempotencyPruner(idempotency, {
    ...tuning,
    random: systemRandom,
    onError: (error) => service.log.warn({ err: error }, "idempotency prune round failed; retrying"),
  });
  pruner.start();
  service.onClose(() => pruner.stop());
}

/** Pending transfers past their timeout (016) are voided, their funds released. */
function startPendingExpirer(
  service: Service,
  ledger: LedgerRepository,
  tuning: PaymentsTuning["expirer"],
): void {
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

/** How often the daily reconciliation checks whether yesterday's D+1 file is due and not yet run. */
const RECONCILE_CHECK_MS = 3_600_000;

/**
 * PY-10's daily job: once per UTC day, reconcile the previous day's settlement file. A day
 * already reconciled is skipped; a file the acquirer has not published yet is tried again
 * at the next check (re-runs add no duplicate exceptions anyway).
 */
function startDailyReconciliation(
  service: Service,
  db: Database,
  acquirerUrl: string,
  feeBps: number,
  tuning: PaymentsTuning["reconciliation"] = {},
): void {
  const check = async (): Promise<boolean> => {
    const date = previousUtcDate(systemClock.nowMs());
    try {
      if (await reconciliationRunExists(db, date)) return false;
      const summary = await reconcileDate({ db, clock: systemClock, feeBps }, date, { acquirerUrl });
      // PY-17: the last-line alarm — differences are a warning (and payments_reconciliation_open_exceptions).
      if (summary.differences > 0)
        service.log.warn({ date, summary }, "reconciliation found differences with the acquirer's file");
      else service.log.info({ date, summary }, "reconciliation run recorded");
    } catch (error) {
      service.log.warn({ err: error, date }, "reconciliation not run; retrying at the next check");
    }
    return false;
  };
  // Checks never overlap (the loop runs one round at a time) and never hold the process open.
  const everyMs = tuning.checkEveryMs ?? RECONCILE_CHECK_MS;
  const loop = new BackgroundLoop({
    name: "daily reconciliation",
    round: check,
    idleMs: everyMs,
    failureBackoff: { capMs: everyMs, jitter: "none" },
    onError: (error) => service.log.warn({ err: error }, "reconciliation check failed"),
    sleep: unrefSleep,
  });
  // First check a minute after start (the service is up and serving by then), then hourly.
  const first = setTimeout(() => loop.start(), tuning.firstCheckMs ?? 60_000);
  first.unref();
  service.onClose(async () => {
    clearTimeout(first);
    await loop.stop();
  });
}

/**
 * On a database with no merchant (PostgreSQL starts with none), one line that says how to make
 * the first: the admin API, through `casebook payments new-key`, which needs the admin token.
 */
function announceNoMerchant(service: Service, config: PaymentsConfig): void {
  const tool = "npx casebook payments new-key --merchant demo";
  const next =
    config.adminToken === undefined
      ? `restart with PAYMENTS_ADMIN_TOKEN=<16+ chars> and run \`PAYMENTS_ADMIN_TOKEN=<same> ${tool}\``
      : `run \`${tool}\` (with the same PAYMENTS_ADMIN_TOKEN)`;
  // `try` / `next`: what `casebook up` prints below its table for this system.
  const tryIt = config.adminToken === undefined ? { next } : { try: tool };
  service.log.warn(tryIt, `no merchant yet: to create one and its API key, ${next}`);
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  tuning: PaymentsTuning = {},
): Promise<RunningPayments> {
  const config = loadPaymentsConfig(env);
  const { url, service, db, built } = await startService({
    service: {
      name: "payments",
      version: VERSION,
      log: { level: config.logLevel },
      errors: [...paymentsErrorRegistries, scenarioErrors],
      openapi: { securitySchemes: bearerSecurityScheme("Merchant API key") },
      description:
        "Payments and double-entry ledger (seed 000 §4): never charges twice, accounts for every cent.",
    },
    // A database that goes silent (a blackholed link) must cost a request a bounded wait, not the handler timeout.
    database: {
      system: "payments",
      env,
      ...databaseOptionsOf(config),
      migrate: (db) => runMigrations(db, { dir: new URL("./store/migrations/", import.meta.url) }),
    },
    build: async ({ service, db }) => {
      const acquirerUrl = await acquirerFor(config, service);
      const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
      const auth = createBearerAuth({ realm: "payments", verify: (key) => merchants.authenticate(key) });
      const ledger = new LedgerRepository(db);
      const idempotency = paymentsIdempotencyStore(db, {
        clock: systemClock,
        leaseS: config.claimLeaseMs / 1000,
      });
      const metrics = createPaymentMetrics(service.registry, {
        clock: systemClock,
        backlog: () => countSagaBacklog(db, { nowMs: systemClock.nowMs() }),
        openExceptions: () => countOpenExceptions(db),
        onError: (error) => service.log.warn({ err: error }, "saga backlog count failed"),
      });
      const acquirer = new AcquirerClient({
        ...tuning.acquirer,
        rateLimit: { capacity: Math.ceil(config.acquirerRatePerS / 2), ratePerS: config.acquirerRatePerS },
        baseUrl: acquirerUrl,
        clock: systemClock,
        random: systemRandom,
        observer: metrics,
        log: service.log,
      });
      registerBreakerGauge(service.registry, () => acquirer.breaker.state);
      service.onClose(async () => acquirer.close());
      const saga = { leaseMs: config.claimLeaseMs, ...tuning.saga };
      const orchestrator = startSagaWorker(service, db, acquirer, idempotency, metrics, saga);
      startRefundRetrier(service, db, acquirer, metrics, tuning.refunds);
      startOutboxRelay(service, db, config);
      startIdempotencyPruner(service, idempotency, tuning.pruner);
      startPendingExpirer(service, ledger, tuning.expirer);
      startDailyReconciliation(service, db, acquirerUrl, config.acquirerFeeBps, tuning.reconciliation);
      const paymentConfig = {
        inlineDriveMs: config.inlineDriveMs,
        breakerOpenMode: config.breakerOpenMode,
        refundRetryAfterMs: config.refundRetryAfterMs,
      };
      // Every merchant route lives in this scope: authenticated on request, before any body is parsed.
      await service.app.register(async (scope) => {
        scope.addHook("onRequest", auth.authenticate);
        scope.addHook("onRequest", correlatePaymentRequests(auth.principalOf));
        registerAccountRoutes(scope, { db, ledger, merchantOf: auth.principalOf });
        registerLedgerRoutes(scope, { db, ledger, merchantOf: auth.principalOf });
        const paymentDeps = {
          db,
          idempotency,
          orchestrator,
          acquirer,
          clock: systemClock,
          merchantOf: auth.principalOf,
          config: paymentConfig,
        };
        registerPaymentRoutes(scope, paymentDeps);
        registerRefundRoutes(scope, paymentDeps);
        registerReconciliationRoutes(scope, { db, clock: systemClock, merchantOf: auth.principalOf });
      });
      if (config.adminToken !== undefined) {
        await registerPaymentsAdminApi(service.app, {
          db,
          clock: systemClock,
          randomBytes,
          adminToken: config.adminToken,
        });
      }
      // The console's scenarios (issue 23): run over this service's own API, loopback only.
      const scenarios = new ScenarioRuns([
        oneKeyScenario({ db, merchants, baseUrl: () => ownUrl(service.app) }),
      ]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      const bootstrap = await bootstrapMerchant(config, merchants, service);
      const noMerchant = bootstrap === undefined && !(await merchants.any());
      return { acquirerUrl, bootstrap, noMerchant };
    },
    listen: { port: config.port, host: config.host },
    listening: ({ acquirerUrl }, { db }) => ({ engine: db.engine, acquirerUrl }),
    announce: ({ bootstrap, noMerchant }, { service, url }) => {
      if (noMerchant) announceNoMerchant(service, config);
      if (!bootstrap) return;
      const hint = `curl -s -H 'Authorization: Bearer ${bootstrap.apiKey}' ${url}/v1/accounts`;
      service.log.info(
        { ...bootstrap, try: hint },
        "bootstrap merchant created: its API key is shown only now",
      );
    },
  });
  const { acquirerUrl, bootstrap } = built;
  return { url, service, db, acquirerUrl, bootstrap, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "payments",
    summary: "idempotent payments, saga orchestration and a double-entry ledger (seed 000 §4)",
    schema: configSchema,
    usage: ["npx casebook run payments", "node systems/payments/src/main.ts"],
    notes:
      "Tools: npx casebook payments new-key [--merchant ID], npx casebook payments reconcile <file.csv | --date D>,\nnpx casebook payments acquirer-sim.\nThe API and the failure modes: systems/payments/README.md",
    start: async () => (await main()).service,
  });
}
