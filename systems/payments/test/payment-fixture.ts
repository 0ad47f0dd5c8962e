/**
 * Pieces of the payments service under test: a database (PGlite in memory, or a fresh PostgreSQL
 * schema) with every migration, fast client and saga timings, seeded payments, ledger balances.
 * The whole stack (simulator, client, orchestrator, routes) is `startFullPayments` in
 * payments-full-fixture.ts.
 */
import type { TestContext } from "node:test";
import type { Service } from "@casebook/infra/http/service";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { eventually } from "@casebook/lab/eventually";
import { uniqueName } from "@casebook/lab/test-engines";
import type { PaymentRoutesConfig } from "../src/api/payment-routes.ts";
import type { AcquirerClient, AcquirerClientOptions } from "../src/clients/acquirer-client.ts";
import { createPayment } from "../src/store/payment-repository.ts";
import type { SagaOrchestrator, SagaOrchestratorOptions } from "../src/workers/saga-orchestrator.ts";
import type { SimFixture } from "./acquirer-sim-fixture.ts";

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

/** Each phase of an acquirer call in the tests: far past any stall of a loaded host (see FAST_CLIENT). */
export const TEST_PHASE_MS = 5_000;
/**
 * Test timings for the client: phases of seconds, fast retries (from 5 ms), sagas back off from 20 ms.
 * The simulator runs in the test's own process, so a stall of the loaded host (hundreds of ms at
 * load ~20 on 2 cores) delays its answer: under short phases that was a timeout, an "unknown"
 * outcome, a status query after a retry delay — a 202 pending where the test expects 201
 * captured, and an extra step in exact counts. A test ABOUT a timeout sets its own short phase
 * (payment-metrics' timeout rate). The deadline leaves 300 ms past one try, as before: room for
 * a quick retry of a call that sent nothing, none for an outage's 1 s Retry-After, which ends
 * the call at once ("unavailable"), and the rate limiter's bounded wait is unchanged.
 */
export const FAST_CLIENT = testClient({
  connectMs: TEST_PHASE_MS,
  headersMs: TEST_PHASE_MS,
  bodyMs: TEST_PHASE_MS,
});

/** FAST_CLIENT's rules with these phases: the call's deadline is one try of them and 300 ms. */
export function testClient(timeouts: {
  connectMs: number;
  headersMs: number;
  bodyMs: number;
}): Partial<AcquirerClientOptions> {
  return {
    timeouts,
    callDeadlineMs: timeouts.connectMs + timeouts.headersMs + timeouts.bodyMs + 300,
    retryBaseMs: 5,
    retryCapMs: 20,
  };
}
/**
 * How long POST /v1/payments drives its saga before answering 202 pending: far past a stall, so
 * a payment the acquirer approves answers 201 (a saga that has to wait answers at once anyway).
 */
export const TEST_INLINE_DRIVE_MS = 10_000;
export const FAST_BACKOFF = { baseMs: 20, capMs: 100, budgetMs: 60_000, maxAttempts: 500 };

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
  const accept = (value: T | undefined) => value !== undefined;
  return (await eventually(check, { timeoutMs, intervalMs: everyMs, accept })) as T;
}

/** Creates a payment and its saga as POST /v1/payments would (idempotency begun, advanced), unclaimed. */
export async function seedPayment(
  db: Database,
  idempotency: IdempotencyStore,
  input: { merchant: string; key: string; amountMinor: bigint; cardToken?: string },
): Promise<bigint> {
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/payments", body: { key: input.key } });
  const begun = await idempotency.begin({ scope: input.merchant, key: input.key, fingerprint });
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
