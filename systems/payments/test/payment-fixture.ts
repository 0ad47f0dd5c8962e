/**
 * The payments service under test: a database (PGlite in memory, or a fresh PostgreSQL schema)
 * with every migration, the REAL acquirer simulator over HTTP on port 0, the acquirer client, an orchestrator, and the payment routes on a Casebook service (driven with inject).
 */
import type { TestContext } from "node:test";
import { createService, type Service } from "@casebook/infra/http/service";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { uniqueName } from "@casebook/lab/test-engines";
import { type PaymentRoutesConfig, registerPaymentRoutes } from "../src/api/payment-routes.ts";
import { fingerprintRequest } from "../src/domain/idempotency.ts";
import { idempotencyErrors } from "../src/domain/idempotency-errors.ts";
import { paymentErrors } from "../src/domain/payment-errors.ts";
import { IdempotencyStore } from "../src/store/idempotency-store.ts";
import { createPayment } from "../src/store/payment-repository.ts";
import { AcquirerClient, type AcquirerClientOptions } from "../src/workers/acquirer-client.ts";
import { SagaOrchestrator, type SagaOrchestratorOptions } from "../src/workers/saga-orchestrator.ts";
import { type SimFixture, startSim } from "./acquirer-sim-fixture.ts";

export const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** Every migration of the system: the schema the service itself runs on. */
export async function migratePayments(db: Database): Promise<void> {
  await runMigrations(db, { dir: MIGRATIONS_DIR });
}

/** PGlite in memory, or a fresh schema on PostgreSQL (dropped when the test ends). */
export async function openTestDb(t: TestContext, url?: string): Promise<{ db: Database; schema?: string }> {
  if (url === undefined) {
    const db = await openDatabase({ system: "payments", dataDir: "memory://", env: {} });
    t.after(() => db.close());
    await migratePayments(db);
    return { db };
  }
  const schema = uniqueName("pay");
  const db = await openDatabase({ system: "payments", url, schema, pool: { maxConnections: 4 } });
  t.after(async () => {
    try {
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await db.close();
    }
  });
  await migratePayments(db);
  return { db, schema };
}

export interface PaymentsFixture {
  db: Database;
  sim: SimFixture;
  acquirer: AcquirerClient;
  idempotency: IdempotencyStore;
  orchestrator: SagaOrchestrator;
  service: Service;
  merchant: string;
  pay(body: Record<string, unknown>, key: string, merchant?: string): Promise<Reply>;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
}

export interface Reply {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

export interface FixtureOptions {
  url?: string;
  routes?: Partial<PaymentRoutesConfig>;
  client?: Partial<AcquirerClientOptions>;
  orchestrator?: Partial<SagaOrchestratorOptions>;
}

/** Fast test timings: a hung acquirer call gives up after ~300 ms, sagas back off from 20 ms. */
export const FAST_CLIENT: Partial<AcquirerClientOptions> = {
  timeouts: { connectMs: 200, headersMs: 300, bodyMs: 200 },
  callDeadlineMs: 1_000,
  retryBaseMs: 5,
  retryCapMs: 20,
};
export const FAST_BACKOFF = { baseMs: 20, capMs: 100, budgetMs: 60_000, maxAttempts: 500 };

export async function startPayments(t: TestContext, options: FixtureOptions = {}): Promise<PaymentsFixture> {
  const { db } = await openTestDb(t, options.url);
  const sim = await startSim(t);
  const random = seededRandom("payments-test");
  const acquirer = new AcquirerClient({
    baseUrl: sim.url,
    clock: systemClock,
    random,
    ...FAST_CLIENT,
    ...options.client,
  });
  t.after(() => acquirer.close());
  const idempotency = new IdempotencyStore(db, { clock: systemClock });
  const orchestrator = new SagaOrchestrator({
    db,
    acquirer,
    idempotency,
    clock: systemClock,
    random,
    owner: uniqueName("orch"),
    leaseMs: 2_500,
    pollIntervalMs: 10,
    backoff: FAST_BACKOFF,
    ...options.orchestrator,
  });
  t.after(() => orchestrator.stop());
  const service = createService({
    name: "payments-test",
    version: "0.0.0",
    log: { level: (process.env.PAYMENTS_TEST_LOG ?? "silent") as "silent" },
    errors: [paymentErrors, idempotencyErrors],
    defaultMetrics: false,
  });
  const merchant = uniqueName("m");
  registerPaymentRoutes(service.app, {
    db,
    idempotency,
    orchestrator,
    acquirer,
    clock: systemClock,
    merchantOf: (request) => String(request.headers["x-test-merchant"] ?? merchant),
    config: { inlineDriveMs: 2_000, breakerOpenMode: "accept", ...options.routes },
  });
  t.after(() => service.close());
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await service.app.inject({
      method: method as "GET",
      url: path,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: res.statusCode,
      body: res.body === "" ? {} : (JSON.parse(res.body) as Record<string, unknown>),
      text: res.body,
    };
  };
  const pay = (body: Record<string, unknown>, key: string, who = merchant) =>
    call("POST", "/v1/payments", body, { "idempotency-key": key, "x-test-merchant": who });
  return { db, sim, acquirer, idempotency, orchestrator, service, merchant, pay, call };
}

export function paymentBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { amountMinor: "5000", currency: "BRL", cardToken: "tok_visa_4242", capture: true, ...overrides };
}

/** Ledger balances of a merchant's accounts in a currency, by role. */
export async function balances(db: Database, merchant: string, currency = "BRL") {
  const { rows } = await db.query<{
    role: string;
    posted: bigint;
    pending_debits: bigint;
    pending_credits: bigint;
  }>(
    `SELECT m.role, (b.posted_credits - b.posted_debits)::int8 AS posted, b.pending_debits, b.pending_credits
       FROM merchant_accounts m JOIN account_balances b ON b.account_id = m.account_id
      WHERE m.merchant_id = $1 AND m.currency = $2`,
    [merchant, currency],
  );
  return Object.fromEntries(rows.map((r) => [r.role, r]));
}

/** Polls `check` until it returns a value, at most `timeoutMs` (for work done by other loops/processes). */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 20,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Creates a payment and its saga as POST /v1/payments would (idempotency begun, advanced), unclaimed. */
export async function seedPayment(
  db: Database,
  idempotency: IdempotencyStore,
  input: { merchant: string; key: string; amountMinor: bigint; cardToken?: string },
): Promise<bigint> {
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/payments", body: { key: input.key } });
  const begun = await idempotency.begin({ merchantId: input.merchant, key: input.key, fingerprint });
  if (begun.kind !== "started") throw new Error("seedPayment: key already used");
  return db.transaction(async (tx) => {
    const payment = await createPayment(tx, {
      merchantId: input.merchant,
      idempotencyKey: input.key,
      amountMinor: input.amountMinor,
      currency: "BRL",
      cardToken: input.cardToken ?? "tok_visa_4242",
      capture: true,
      idemGeneration: begun.lease.generation,
      nowMs: Date.now(),
    });
    await idempotency.advance(tx, begun.lease, "saga_authorize");
    return payment.id;
  });
}
