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
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
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
import { runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { parseCallerApiKeys } from "@casebook/kit/caller-api-keys";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { registerPaymentsApi } from "./api/register-api.ts";
import { AcquirerClient } from "./clients/acquirer-client.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_MERCHANT,
  loadPaymentsConfig,
  type PaymentsConfig,
} from "./config.ts";
import { paymentsErrorRegistries } from "./errors.ts";
import { createPaymentMetrics, registerBreakerGauge } from "./metrics.ts";
import { acquirerTimeoutScenario } from "./scenarios/acquirer-timeout-scenario.ts";
import { oneKeyScenario } from "./scenarios/one-key-scenario.ts";
import { createAcquirerSim } from "./sim/acquirer-sim.ts";
import { countOpenExceptions, countSagaBacklog } from "./store/backlog-counts.ts";
import { paymentsIdempotencyStore } from "./store/idempotency-keys.ts";
import { LedgerRepository } from "./store/ledger-repository.ts";
import { MerchantRepository } from "./store/merchant-repository.ts";
import { type PaymentsTuning, startWorkers } from "./workers/start-workers.ts";

export type { PaymentsTuning };

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

/**
 * The keys `casebook up` granted to the systems calling payments (PAYMENTS_CALLER_API_KEYS): each
 * registered for a merchant named after its caller, created when absent — so a restart, or a
 * second replica, with the same keys finds them in place.
 */
async function registerCallerKeys(config: PaymentsConfig, merchants: MerchantRepository, service: Service) {
  for (const { caller, key, prefix } of parseCallerApiKeys(config.callerApiKeys)) {
    await merchants.ensureWithKey({ id: caller, name: `${caller} (caller)`, key });
    service.log.info({ merchantId: caller, prefix }, "caller key registered");
  }
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
      const adapters = { service, db, config, acquirer, acquirerUrl, ledger, idempotency, metrics };
      const orchestrator = startWorkers(adapters, tuning);
      await registerPaymentsApi(service.app, {
        db,
        ledger,
        merchants,
        idempotency,
        orchestrator,
        acquirer,
        clock: systemClock,
        randomBytes,
        config: {
          inlineDriveMs: config.inlineDriveMs,
          breakerOpenMode: config.breakerOpenMode,
          refundRetryAfterMs: config.refundRetryAfterMs,
        },
        adminToken: config.adminToken,
        keyCacheTtlMs: config.keyCacheTtlMs,
      });
      // The console's scenarios (issue 23): run over this service's own API, loopback only.
      const scenarios = new ScenarioRuns([
        oneKeyScenario({ db, merchants, baseUrl: () => ownUrl(service.app) }),
        // A world of its own: private database and acquirer simulator, never this service's.
        acquirerTimeoutScenario(),
      ]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      await registerCallerKeys(config, merchants, service);
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
