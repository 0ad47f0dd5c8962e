/**
 * The end-to-end bench: `POST /v1/payments` (capture: true, a unique Idempotency-Key each, one
 * merchant's API key) through the real payments service — idempotency begin, payment + ledger
 * hold, the saga authorize → capture at the acquirer simulator (its latency per call, 5 ms by
 * default), the posted hold, the stored response — measured with lab's load generator:
 * - closed loop at N clients: how many payments/s one service process completes;
 * - open loop at a fixed rate: latency from each request's intended send time (p50/p99).
 * A request counts only when it answers 201 `captured` inside the service's inline drive.
 *
 * After each run the bench waits until no saga is pending, then reads the acquirer's counters:
 * authorizations must equal the payments created, and authorization calls must equal
 * authorizations (no key charged twice) — a bench that double-charged measured a broken system.
 *
 * @example
 * const bench = await openSagaBench(url, { latencyMs: 5, acquirerRatePerS: 10_000, log });
 * const run = await bench.runClosed({ clients: 8, durationMs: 5_000, warmupMs: 1_000 });
 * run.paymentsPerS; run.report.latencyMs.p99; run.authorizations === run.payments;
 * await bench.close();
 */

import { randomBytes } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { systemClock } from "@casebook/kit/clock";
import { type LoadReport, type LoadTask, runClosedLoop, runOpenLoop } from "@casebook/lab/load-generator";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { uniqueName } from "@casebook/lab/test-engines";
import { MerchantRepository } from "../src/store/merchant-repository.ts";

/** The two servers of the saga run, each through its real entry point. */
const acquirerEntry = new URL("../src/sim/acquirer-main.ts", import.meta.url);
const serviceEntry = new URL("../src/main.ts", import.meta.url);

const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** A payment slower than this counts as an error; far past the service's 2 s inline drive. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Open loop: requests in flight at most; one due past it is dropped and counted. */
const MAX_IN_FLIGHT = 512;
/** Bound on waiting, between runs, for sagas answered 202 to finish. */
const SETTLE_TIMEOUT_MS = 30_000;
const SETTLE_POLL_MS = 100;
/** The service's pool: its default, passed explicitly so the report says what ran. */
const SERVICE_POOL_CONNECTIONS = 10;
/** Error messages logged per run: enough to see what failed, bounded when everything does. */
const MAX_LOGGED_ERRORS = 3;
const PAYMENT_BODY = JSON.stringify({
  amountMinor: "1250",
  currency: "USD",
  cardToken: "tok_visa_bench",
  capture: true,
});

export interface SagaBenchSetup {
  /** The simulator's latency on every call (a payment makes two: authorize, capture). */
  latencyMs: number;
  /** PAYMENTS_ACQUIRER_RATE_PER_S of the service: its own limit on acquirer calls (PY-12). */
  acquirerRatePerS: number;
  log: (line: string) => void;
}

export interface SagaRun {
  readonly mode: "closed" | "open";
  readonly clients?: number;
  readonly ratePerS?: number;
  readonly latencyMs: number;
  readonly report: LoadReport;
  /** Payments answered 201 captured per second of the measured window. */
  readonly paymentsPerS: number;
  /** Payments the run created (warmup included), counted in the database. */
  readonly payments: number;
  /** Authorizations the acquirer made during the run, and the authorization calls it received. */
  readonly authorizations: number;
  readonly authorizationCalls: number;
}

export interface SagaBench {
  readonly schema: string;
  /** For the report: what ran, with which settings. */
  readonly description: string;
  runClosed(options: { clients: number; durationMs: number; warmupMs: number }): Promise<SagaRun>;
  runOpen(options: { ratePerS: number; durationMs: number; warmupMs: number }): Promise<SagaRun>;
  /** Stops both processes and drops the schema. */
  close(): Promise<void>;
}

interface Counters {
  payments: number;
  authorizations: number;
  authorizationCalls: number;
}

/** One POST /v1/payments over a keep-alive agent; resolves on 201 captured, rejects otherwise. */
function postPayment(
  agent: Agent,
  url: URL,
  apiKey: string,
  key: string,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers = {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(PAYMENT_BODY)),
      "idempotency-key": key,
    };
    const req = httpRequest(url, { method: "POST", agent, headers, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode === 201 && text.includes('"status":"captured"')) resolve();
        else reject(new Error(`POST /v1/payments answered ${res.statusCode}: ${text.slice(0, 200)}`));
      });
    });
    req.on("error", reject);
    req.end(PAYMENT_BODY);
  });
}

async function counters(db: Database, acquirerUrl: string): Promise<Counters> {
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int4 AS n FROM payments");
  const res = await fetch(`${acquirerUrl}/admin/stats`, { signal: AbortSignal.timeout(5_000) });
  const stats = (await res.json()) as { authorizations: number; authorizationAttempts: number };
  return {
    payments: rows[0]!.n,
    authorizations: stats.authorizations,
    authorizationCalls: stats.authorizationAttempts,
  };
}

/** Waits until every saga is done (those answered 202 finish in the background). */
async function settled(db: Database): Promise<void> {
  const deadline = performance.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(*)::int4 AS n FROM payments WHERE step <> 'done'",
    );
    if (rows[0]!.n === 0) return;
    if (performance.now() > deadline)
      throw new Error(`${rows[0]!.n} sagas still pending after ${SETTLE_TIMEOUT_MS} ms`);
    await sleep(SETTLE_POLL_MS);
  }
}

/** Migrations, a merchant and its key, then the simulator and the service on their own processes. */
export async function openSagaBench(pgUrl: string, setup: SagaBenchSetup): Promise<SagaBench> {
  const schema = uniqueName("bench_saga");
  const db = await openDatabase({ system: "payments", url: pgUrl, schema, pool: { maxConnections: 2 } });
  const started: ServerProcess[] = [];
  const close = async () => {
    for (const child of started.reverse()) await child.stop();
    try {
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await db.close();
    }
  };
  try {
    await runMigrations(db, { dir: MIGRATIONS_DIR });
    const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
    const { apiKey } = await merchants.create({ id: "bench", name: "saga bench merchant" });
    const acquirerEnv = {
      ACQUIRER_LATENCY_MS: String(setup.latencyMs),
      ACQUIRER_SEED: "saga-bench",
      ACQUIRER_MAX_PAYMENTS: "10000000",
    };
    const acquirer = await startServerProcess({
      name: "acquirer-sim",
      entry: acquirerEntry,
      env: acquirerEnv,
    });
    started.push(acquirer);
    const service = await startServerProcess({
      name: "payments",
      entry: serviceEntry,
      env: {
        DATABASE_URL: pgUrl,
        PAYMENTS_DB_SCHEMA: schema,
        ACQUIRER_URL: acquirer.url,
        PAYMENTS_BOOTSTRAP_MERCHANT: "off",
        PAYMENTS_ACQUIRER_RATE_PER_S: String(setup.acquirerRatePerS),
        PAYMENTS_DB_MAX_CONNECTIONS: String(SERVICE_POOL_CONNECTIONS),
      },
    });
    started.push(service);
    return sagaBench({
      db,
      schema,
      setup,
      apiKey: apiKey.key,
      serviceUrl: service.url,
      acquirerUrl: acquirer.url,
      close,
    });
  } catch (error) {
    await close();
    throw error;
  }
}

function sagaBench(o: {
  db: Database;
  schema: string;
  setup: SagaBenchSetup;
  apiKey: string;
  serviceUrl: string;
  acquirerUrl: string;
  close: () => Promise<void>;
}): SagaBench {
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const url = new URL("/v1/payments", o.serviceUrl);
  let run = 0;
  const measure = async (
    shape: Pick<SagaRun, "mode" | "clients" | "ratePerS">,
    load: (task: LoadTask) => Promise<LoadReport>,
  ) => {
    run += 1;
    const prefix = `bench-${run}-`;
    let logged = 0;
    const task: LoadTask = ({ index, signal }) =>
      postPayment(agent, url, o.apiKey, `${prefix}${index}`, signal).catch((error: unknown) => {
        if (logged++ < MAX_LOGGED_ERRORS) o.setup.log(`  payment failed: ${String(error)}`);
        throw error;
      });
    const before = await counters(o.db, o.acquirerUrl);
    const report = await load(task);
    await settled(o.db);
    const after = await counters(o.db, o.acquirerUrl);
    const seconds = report.measuredMs / 1_000;
    return {
      ...shape,
      latencyMs: o.setup.latencyMs,
      report,
      paymentsPerS: seconds > 0 ? report.ok / seconds : 0,
      payments: after.payments - before.payments,
      authorizations: after.authorizations - before.authorizations,
      authorizationCalls: after.authorizationCalls - before.authorizationCalls,
    } satisfies SagaRun;
  };
  const common = { requestTimeoutMs: REQUEST_TIMEOUT_MS };
  return {
    schema: o.schema,
    description:
      `saga: one payments service process (src/main.ts, pool ${SERVICE_POOL_CONNECTIONS}, acquirer limit ${o.setup.acquirerRatePerS}/s) and the ` +
      `acquirer simulator (${o.setup.latencyMs} ms per call) as child processes; POST /v1/payments capture=true`,
    runClosed: ({ clients, durationMs, warmupMs }) =>
      measure({ mode: "closed", clients }, (task) =>
        runClosedLoop({ ...common, concurrency: clients, durationMs, warmupMs, task }),
      ),
    runOpen: ({ ratePerS, durationMs, warmupMs }) =>
      measure({ mode: "open", ratePerS }, (task) =>
        runOpenLoop({ ...common, ratePerS, durationMs, warmupMs, maxInFlight: MAX_IN_FLIGHT, task }),
      ),
    close: async () => {
      agent.destroy();
      await o.close();
    },
  };
}
