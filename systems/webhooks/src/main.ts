/**
 * Composition root of the webhooks service (seed 003): config → database (PostgreSQL or
 * embedded PGlite) and migrations → the tenant HTTP API (events, subscriptions, deliveries;
 * admin behind WEBHOOKS_ADMIN_TOKEN) → the workers (outbox relay + dispatcher, delivery
 * worker, retention sweeper) on one metrics registry → graceful shutdown (drain requests,
 * stop the worker — its in-flight sends finish and are recorded — then the relay and the
 * sweeper, then the sender's sockets, then the pool). Stateless: run as many instances as
 * you like against one DATABASE_URL; leases and SKIP LOCKED share the work (WH-10, WH-11).
 *
 * @example
 * // PORT=8113 node systems/webhooks/src/main.ts   (npx casebook run webhooks runs it through the CLI)
 * const running = await main({ PORT: "0", CASEBOOK_DATA: tmpDir, LOG_LEVEL: "silent" });
 * running.bootstrap?.apiKey; // "whk_…": the demo tenant's key, on first start only
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { leaseOwnerId } from "@casebook/infra/sql/lease-owner";
import type { Database } from "@casebook/infra/sql/sql";
import { parseCallerApiKeys } from "@casebook/kit/caller-api-keys";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { TenantDefaults } from "./api/admin-routes.ts";
import { registerWebhooksApi } from "./api/register-api.ts";
import { HttpSender } from "./clients/http-sender.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_TENANT,
  loadWebhooksConfig,
  type WebhooksConfig,
} from "./config.ts";
import { storeErrors, webhooksErrorRegistries } from "./errors.ts";
import { createWorkerMetrics } from "./metrics.ts";
import { noisyTenantScenario } from "./scenarios/noisy-tenant-scenario.ts";
import { receiverOutageScenario } from "./scenarios/receiver-outage-scenario.ts";
import { migrateWebhookStore } from "./store/migrate.ts";
import { anyTenant, createTenant, ensureTenantWithKey, getTenant } from "./store/tenant-repository.ts";
import { DeliveryWorker } from "./workers/delivery-worker.ts";
import { Dispatcher } from "./workers/dispatcher.ts";
import { OutboxRelay } from "./workers/outbox-relay.ts";
import { RetentionSweeper } from "./workers/retention-sweeper.ts";

export const VERSION = "0.1.0";
/** Bound on one phase of a send (connect, or the body after the headers) under a long deadline. */
const MAX_SEND_PHASE_MS = 5_000;
/** Close hooks beyond the worker's drain (one request deadline): writes and pool shutdown. */
const CLOSE_HOOK_SLACK_MS = 5_000;

export interface RunningWebhooks {
  readonly url: string;
  readonly service: Service;
  readonly db: Database;
  readonly config: WebhooksConfig;
  /** The demo tenant created by THIS start (undefined when it existed already or is off). */
  readonly bootstrap: { tenantId: string; apiKey: string } | undefined;
  /** The delivery worker, when WEBHOOKS_WORKERS is on. */
  readonly worker: DeliveryWorker | undefined;
  close(): Promise<void>;
}

function tenantDefaultsOf(config: WebhooksConfig): TenantDefaults {
  return {
    deliveryWindowS: config.retentionHours * 3_600,
    payloadRetentionS: config.payloadRetentionHoursResolved * 3_600,
  };
}

/** WEBHOOKS_BOOTSTRAP_TENANT, or `demo` on the embedded database when there is no admin API. */
async function bootstrapTenant(config: WebhooksConfig, db: Database, service: Service) {
  const embeddedDemo = config.databaseUrl === undefined && config.adminToken === undefined;
  const id = config.bootstrapTenant ?? (embeddedDemo ? DEFAULT_BOOTSTRAP_TENANT : BOOTSTRAP_OFF);
  if (id === BOOTSTRAP_OFF) return undefined;
  if (await getTenant(db, id)) {
    service.log.info({ tenantId: id }, "bootstrap tenant exists; its API key was printed on first start");
    return undefined;
  }
  try {
    const created = await createTenant(
      db,
      { id, name: `${id} (bootstrap tenant)`, ...tenantDefaultsOf(config) },
      { nowMs: systemClock.nowMs(), randomBytes },
    );
    return { tenantId: created.tenant.id, apiKey: created.apiKey.key };
  } catch (error) {
    // Two instances starting at once on one database: the other one created it first.
    if (storeErrors.is(error, "WEBHOOK_TENANT_INVALID") && error.fields.field === "id") return undefined;
    throw error;
  }
}

/**
 * The keys `casebook up` granted to the systems publishing here (WEBHOOKS_CALLER_API_KEYS): each
 * registered for a tenant named after its caller, created when absent — a restart, or a second
 * replica, with the same keys finds them in place.
 */
async function registerCallerKeys(config: WebhooksConfig, db: Database, service: Service) {
  for (const { caller, key, prefix } of parseCallerApiKeys(config.callerApiKeys)) {
    const tenant = { id: caller, name: `${caller} (caller)`, ...tenantDefaultsOf(config) };
    await ensureTenantWithKey(db, tenant, key, { nowMs: systemClock.nowMs(), randomBytes });
    service.log.info({ tenantId: caller, prefix }, "caller key registered");
  }
}

/** Phase timeouts that add up to the whole-request deadline (the worker enforces the sum too). */
function senderFor(config: WebhooksConfig): HttpSender {
  const deadlineMs = config.httpDeadlineMs;
  const connectMs = Math.min(MAX_SEND_PHASE_MS, Math.floor(deadlineMs / 4));
  const bodyMs = Math.min(MAX_SEND_PHASE_MS, Math.floor(deadlineMs / 4));
  return new HttpSender({
    policy: config.urlPolicy,
    timeouts: { connectMs, headersMs: deadlineMs - connectMs - bodyMs, bodyMs },
    userAgent: `casebook-webhooks/${VERSION}`,
    // The fair scheduler decides who sends; an agent queue below it would serve in arrival order.
    maxSocketsPerOrigin: config.workerConcurrency,
  });
}

/**
 * The background loops, each stopped by a close hook. Hooks run last-added first, so the
 * worker (added last) drains before the relay and sweeper stop and before the pool closes.
 */
function startWorkers(config: WebhooksConfig, db: Database, service: Service): DeliveryWorker {
  const log = service.log;
  const sender = senderFor(config);
  service.onClose(function closeSender() {
    sender.close();
  });
  // One relay publishes one event at a time (two commits each); several keep up with the seed's peak.
  const relays = Array.from(
    { length: config.relays },
    () =>
      new OutboxRelay(db, {
        publisher: new Dispatcher(db, { clock: systemClock }),
        clock: systemClock,
        random: systemRandom,
        pollIntervalMs: config.pollIntervalMs,
        onError: (err, eventId) => log.warn({ err, eventId }, "outbox relay: publish failed; retrying"),
      }),
  );
  const sweeper = new RetentionSweeper(db, {
    clock: systemClock,
    intervalMs: config.sweepIntervalMs,
    onError: (err) => log.warn({ err }, "retention sweep failed; retrying next round"),
  });
  const worker = new DeliveryWorker({
    db,
    clock: systemClock,
    random: systemRandom,
    workerId: leaseOwnerId(),
    sender,
    httpDeadlineMs: config.httpDeadlineMs,
    leaseMs: config.leaseMs,
    maxInFlight: config.workerConcurrency,
    pollIntervalMs: config.pollIntervalMs,
    metrics: createWorkerMetrics(service.registry),
    log: (obj, msg) => log.info(obj, msg),
  });
  for (const relay of relays) relay.start();
  service.onClose(function stopRelays() {
    return Promise.all(relays.map((relay) => relay.stop())).then(() => undefined);
  });
  sweeper.start();
  service.onClose(function stopSweeper() {
    return sweeper.stop();
  });
  worker.start();
  service.onClose(function stopDeliveryWorker() {
    return worker.stop();
  });
  return worker;
}

function announce(service: Service, url: string, bootstrap: { tenantId: string; apiKey: string }): void {
  const hint =
    `curl -s ${url}/v1/events -H 'Authorization: Bearer ${bootstrap.apiKey}' ` +
    `-H 'content-type: application/json' -d '{"type":"invoice.paid","payload":{"invoice":"in_1"}}'`;
  service.log.info({ ...bootstrap, try: hint }, "bootstrap tenant created: its API key is shown only now");
}

/**
 * On a database with no tenant (PostgreSQL, or any start with WEBHOOKS_ADMIN_TOKEN set), one
 * line that says how to make the first: `casebook webhooks new-key`, which needs the admin token.
 */
function announceNoTenant(service: Service, config: WebhooksConfig): void {
  const tool = "npx casebook webhooks new-key --tenant demo";
  const next =
    config.adminToken === undefined
      ? `restart with WEBHOOKS_ADMIN_TOKEN=<16+ chars> and run \`WEBHOOKS_ADMIN_TOKEN=<same> ${tool}\``
      : `run \`${tool}\` (with the same WEBHOOKS_ADMIN_TOKEN)`;
  // `try` / `next`: what `casebook up` prints below its table for this system.
  const tryIt = config.adminToken === undefined ? { next } : { try: tool };
  service.log.warn(tryIt, `no tenant yet: to create one and its API key, ${next}`);
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningWebhooks> {
  const config = loadWebhooksConfig(env);
  const { url, service, db, built } = await startService({
    service: {
      name: "webhooks",
      version: VERSION,
      log: { level: config.logLevel },
      errors: [...webhooksErrorRegistries, scenarioErrors],
      openapi: {
        securitySchemes: bearerSecurityScheme("Tenant API key (whk_...); the admin token on /admin routes"),
      },
      // The worker's stop waits for sends in flight, each bounded by the request deadline.
      closeHookTimeoutMs: config.httpDeadlineMs + CLOSE_HOOK_SLACK_MS,
      description:
        "Multitenant outbound webhooks (seed 003): signed, at-least-once, fair across tenants, 24 h at most.",
    },
    // A dead link must fail a request inside the handler timeout, with SQL_UNAVAILABLE.
    database: { system: "webhooks", env, ...databaseOptionsOf(config), migrate: migrateWebhookStore },
    build: async ({ service, db }) => {
      await registerWebhooksApi(service.app, {
        db,
        clock: systemClock,
        randomBytes,
        settings: { maxPayloadBytes: config.maxPayloadBytes, urlPolicy: config.urlPolicy },
        tenantDefaults: tenantDefaultsOf(config),
        adminToken: config.adminToken,
      });
      // The console's scenarios (issue 23), loopback only; each runs in a private world of its own.
      const scenarios = new ScenarioRuns([receiverOutageScenario(), noisyTenantScenario()]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      const worker = config.workers ? startWorkers(config, db, service) : undefined;
      await registerCallerKeys(config, db, service);
      const bootstrap = await bootstrapTenant(config, db, service);
      const noTenant = bootstrap === undefined && !(await anyTenant(db));
      return { worker, bootstrap, noTenant };
    },
    listen: { port: config.port, host: config.host },
    listening: (_, { db }) => ({ engine: db.engine, workers: config.workers }),
    announce: ({ bootstrap, noTenant }, { service, url }) => {
      if (noTenant) announceNoTenant(service, config);
      if (bootstrap) announce(service, url, bootstrap);
    },
  });
  const { worker, bootstrap } = built;
  return { url, service, db, config, bootstrap, worker, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "webhooks",
    summary: "multitenant outbound webhook delivery (seed 003)",
    schema: configSchema,
    usage: ["npx casebook run webhooks", "node systems/webhooks/src/main.ts"],
    notes:
      "A tenant API key: npx casebook webhooks new-key [--tenant ID] (needs WEBHOOKS_ADMIN_TOKEN).\nA receiver to try it with: npx casebook webhooks demo-receiver.\nThe API and the failure modes: systems/webhooks/README.md",
    start: async () => (await main()).service,
  });
}
