/**
 * The payments stack, its HTTP API wired by `registerPaymentsApi` exactly as main.ts wires it
 * (bearer auth on real merchant keys included), plus a refund retry worker (not started: a
 * test runs it or starts it).
 * PGlite in memory, or a fresh PostgreSQL schema dropped when the test ends.
 */

import { randomBytes } from "node:crypto";
import { type TestContext, test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { registerPaymentsApi } from "../src/api/register-api.ts";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { paymentsErrorRegistries } from "../src/errors.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import { RefundRetrier, type RefundRetrierOptions } from "../src/workers/refund-retrier.ts";
import { SagaOrchestrator } from "../src/workers/saga-orchestrator.ts";
import { startSim } from "./acquirer-sim-fixture.ts";
import { merchantKeyHeaders } from "./merchant-api-service.ts";
import {
  FAST_BACKOFF,
  FAST_CLIENT,
  type FixtureOptions,
  openTestDb,
  type PaymentsFixture,
  type Reply,
  TEST_INLINE_DRIVE_MS,
} from "./payment-fixture.ts";

/** A fresh database with every migration: PGlite in memory, or a PostgreSQL schema of its own. */
export const openFullTestDb = openTestDb;

export interface FullFixture extends PaymentsFixture {
  retrier: RefundRetrier;
  schema: string | undefined;
}

export interface FullFixtureOptions extends FixtureOptions {
  retrier?: Partial<RefundRetrierOptions>;
  /** A database the test opened and migrated itself (an upgraded data directory); the test closes it. */
  db?: Database;
}

/** Fast refund retries for tests: from 10 ms, capped at 50 ms. */
export const FAST_REFUND_BACKOFF = { baseMs: 10, capMs: 50, maxAttempts: 20, budgetMs: 60_000 };

export async function startFullPayments(
  t: TestContext,
  options: FullFixtureOptions = {},
): Promise<FullFixture> {
  const { db, schema } =
    options.db === undefined ? await openFullTestDb(t, options.url) : { db: options.db, schema: undefined };
  const sim = await startSim(t);
  const random = seededRandom("payments-full-test");
  const acquirer = new AcquirerClient({
    baseUrl: sim.url,
    clock: systemClock,
    random,
    ...FAST_CLIENT,
    ...options.client,
  });
  t.after(() => acquirer.close());
  const idempotency = paymentsIdempotencyStore(db, { clock: systemClock });
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
  const retrier = new RefundRetrier({
    db,
    acquirer,
    clock: systemClock,
    random,
    owner: uniqueName("refunds"),
    pollIntervalMs: 10,
    backoff: FAST_REFUND_BACKOFF,
    ...options.retrier,
  });
  t.after(() => retrier.stop());
  const service = createService({
    name: "payments-full-test",
    version: "0.0.0",
    log: { level: (process.env.PAYMENTS_TEST_LOG ?? "silent") as "silent" },
    errors: paymentsErrorRegistries,
    defaultMetrics: false,
  });
  t.after(() => service.close());
  // The API as main wires it (register-api.ts): real merchants with real keys, the bearer
  // check and the correlation hooks; a test acts as a merchant by `x-test-merchant` (its key is sent).
  const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
  await registerPaymentsApi(service.app, {
    db,
    ledger: new LedgerRepository(db),
    merchants,
    idempotency,
    orchestrator,
    acquirer,
    clock: systemClock,
    randomBytes,
    config: {
      inlineDriveMs: TEST_INLINE_DRIVE_MS,
      breakerOpenMode: "accept",
      refundRetryAfterMs: 0,
      ...options.routes,
    },
  });
  const merchant = uniqueName("m");
  const authorized = merchantKeyHeaders(merchants, merchant);
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> => {
    const res = await service.app.inject({
      method: method as "GET",
      url: path,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(await authorized(headers)),
      },
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
  return { db, schema, sim, acquirer, idempotency, orchestrator, retrier, service, merchant, pay, call };
}

/**
 * Registers `name [pglite]` and `name [postgresql]`: the same test on both engines. On PostgreSQL
 * it skips with the engine's reason when none is reachable (CI requires it); on PGlite it is
 * engine-free (skipped in CI's closed-engine pass, which the PostgreSQL half is for).
 */
export function testOnEngines(
  name: string,
  fn: (t: TestContext, url: string | undefined) => Promise<void>,
): void {
  test(`${name} [pglite]`, async (t) => {
    if (!engineFree(t)) await fn(t, undefined);
  });
  test(`${name} [postgresql]`, async (t) => {
    const url = await requirePostgres(t);
    if (url) await fn(t, url);
  });
}
