/**
 * The proof, Jepsen's bank workload for payments: on real PostgreSQL (a fresh schema),
 * three payments service PROCESSES (the real composition root) and the acquirer simulator in a
 * process of its own; four seeded clients run random ledger transfers between no-overdraft
 * wallets, payments (capture; authorize then capture, partial capture or void; declines) and
 * partial refunds, each with an idempotency key, some re-sent on purpose as if the response was
 * lost. Meanwhile: the acquirer charges and never answers (hang, then reset), goes down (503,
 * then reset connections), and two service processes are SIGKILLed mid-flight and restarted.
 *
 * Afterwards, once nothing is pending: every currency sums to 0, balances equal their entries,
 * no no-overdraft account is negative; the acquirer saw one authorization call per key; every
 * payment and refund ended where the acquirer's record says; every dropped response replayed
 * identically; and the day's reconciliation reports exactly the differences injected into the
 * simulator's settlement file. Seeded (BANK_WORKLOAD_SEED), bounded (~10 s of load under faults, up to
 * 20 s more without them on a loaded host, until the checks have enough to count).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { requirePostgres } from "@casebook/lab/test-engines";
import type { Behaviour } from "../src/sim/acquirer-behaviour.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import {
  acquirerViews,
  DAY_MS,
  paymentMismatches,
  paymentRows,
  quiesce,
  type ReconciliationOutcome,
  reconcileWithInjectedDifferences,
  refundMismatches,
  utcDates,
} from "./bank-workload-checks.ts";
import { BankClient, PaymentPools, type WorkloadWorld } from "./bank-workload-client.ts";
import {
  type AcquirerCounters,
  type AcquirerProcess,
  type ServiceCluster,
  startAcquirer,
  startServices,
} from "./bank-workload-cluster.ts";
import { Tally } from "./bank-workload-tally.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";
import { openTestDb } from "./payment-fixture.ts";

const SEED = process.env.BANK_WORKLOAD_SEED ?? "bank-workload-1";
const SERVICES = 3;
const CLIENTS = 4;
/** Client load, faults included; the rest of the test is setup, quiescence and checks. */
const RUN_MS = 10_500;
const MAX_OPS_PER_CLIENT = 2_000;
const LOST_RESPONSE_RATE = 0.15;
const CURRENCIES = ["BRL", "USD"] as const;
/** Few wallets, little money: transfers cross (A→B beside B→A) and run dry often. */
const WALLETS_PER_CURRENCY = 4;
const WALLET_FUNDING_MINOR = 6_000n;
/** Past RUN_MS, the load goes on (faults over) until `enoughHappened`, for at most this long. */
const OVERTIME_MS = 20_000;
/** Bound on waiting for every saga and refund to settle once the faults are off. */
const QUIESCE_TIMEOUT_MS = 25_000;

/** The counts the checks below need to mean something; the load runs until they are reached. */
const AT_LEAST = { payments: 31, transfers: 21, refunds: 11, replays: 6 } as const;

function enoughHappened(tally: Tally): boolean {
  return (
    tally.total("payment.") >= AT_LEAST.payments &&
    tally.get("transfer.ok") >= AT_LEAST.transfers &&
    tally.get("transfer.insufficient-funds") > 0 &&
    tally.total("refund.") >= AT_LEAST.refunds &&
    tally.get("replay.checked") >= AT_LEAST.replays
  );
}

interface FaultStep {
  atMs: number;
  name: string;
  act(): Promise<void>;
}

/** The faults, in time order from the start of the load: timeouts and crashes overlap on purpose. */
function faultSchedule(
  acquirer: AcquirerProcess,
  services: ServiceCluster,
  restarts: Promise<void>[],
): FaultStep[] {
  const behave = (patch: Partial<Behaviour>) => () => acquirer.behave(patch);
  const restart = (slot: number) => async () => {
    restarts.push(services.restart(slot)); // not awaited: a restart takes seconds, the schedule goes on
  };
  return [
    {
      atMs: 0,
      name: "acquirer: 2 % of calls fail before processing, 0–5 ms jitter",
      act: behave({ errorRate: 0.02, latencyJitterMs: 5 }),
    },
    {
      atMs: 1_000,
      name: "acquirer: 35 % of charges done but never answered (hang)",
      act: behave({ timeoutAfterChargeRate: 0.35, timeoutMode: "hang", hangMs: 1_500 }),
    },
    { atMs: 2_200, name: "SIGKILL payments-0 (calls hanging at the acquirer)", act: () => services.kill(0) },
    { atMs: 3_200, name: "restart payments-0", act: restart(0) },
    { atMs: 4_000, name: "acquirer: charges answered again", act: behave({ timeoutAfterChargeRate: 0 }) },
    {
      atMs: 4_500,
      name: "acquirer outage: every call refused (503)",
      act: behave({ outage: true, outageMode: "refuse" }),
    },
    { atMs: 5_700, name: "acquirer outage: every connection reset", act: behave({ outageMode: "reset" }) },
    {
      atMs: 6_700,
      name: "acquirer back; 20 % of charges lost by a reset",
      act: behave({ outage: false, timeoutAfterChargeRate: 0.2, timeoutMode: "reset" }),
    },
    { atMs: 7_500, name: "SIGKILL payments-2", act: () => services.kill(2) },
    { atMs: 8_500, name: "restart payments-2", act: restart(2) },
    { atMs: 9_500, name: "acquirer: faults off", act: behave({ timeoutAfterChargeRate: 0, errorRate: 0 }) },
  ];
}

async function runFaults(steps: readonly FaultStep[], startMs: number, log: string[]): Promise<void> {
  for (const step of steps) {
    const waitMs = startMs + step.atMs - Date.now();
    if (waitMs > 0) await sleep(waitMs);
    await step.act();
    log.push(`+${Date.now() - startMs} ms ${step.name}`);
  }
}

/** Two merchants with API keys, and funded no-overdraft wallets per currency (from an overdraft "bank"). */
async function seedWorld(db: Database, live: () => string[]): Promise<WorkloadWorld> {
  const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
  const keys = [];
  for (const id of ["bank-m1", "bank-m2"]) {
    const created = await merchants.create({ id, name: `bank workload ${id}` });
    keys.push({ id, apiKey: created.apiKey.key });
  }
  const ledger = new LedgerRepository(db);
  const wallets: Record<string, bigint[]> = {};
  for (const currency of CURRENCIES) {
    const bank = await ledger.createAccount({ currency, metadata: { role: "bank" } });
    wallets[currency] = [];
    for (let i = 0; i < WALLETS_PER_CURRENCY; i++) {
      const wallet = await ledger.createAccount({ currency, noOverdraft: true, metadata: { wallet: i } });
      await ledger.transfer({
        idemKey: `fund-${currency}-${i}`,
        from: bank.id,
        to: wallet.id,
        amount: WALLET_FUNDING_MINOR,
        currency,
      });
      wallets[currency].push(wallet.id);
    }
  }
  return { merchants: keys, currencies: CURRENCIES, wallets, live };
}

/** The clients, each on its own two connections, racing until RUN_MS is over. */
async function runClients(url: string, schema: string, world: WorkloadWorld, tally: Tally, untilMs: number) {
  const pools = new PaymentPools();
  const dbs = await Promise.all(
    Array.from({ length: CLIENTS }, () =>
      openDatabase({ system: "payments", url, schema, pool: { maxConnections: 2 } }),
    ),
  );
  try {
    await Promise.all(
      dbs.map((db, i) =>
        new BankClient({
          name: `c${i}`,
          world,
          ledger: new LedgerRepository(db),
          pools,
          tally,
          random: seededRandom(`${SEED}:client-${i}`),
          lostResponseRate: LOST_RESPONSE_RATE,
        }).run({
          untilMs,
          hardStopMs: untilMs + OVERTIME_MS,
          maxOps: MAX_OPS_PER_CLIENT,
          enough: () => enoughHappened(tally),
        }),
      ),
    );
  } finally {
    await Promise.all(dbs.map((db) => db.close()));
  }
}

interface RunResult {
  tally: Tally;
  faults: string[];
  stats: AcquirerCounters;
  rows: Awaited<ReturnType<typeof paymentRows>>;
  views: Awaited<ReturnType<typeof acquirerViews>>;
  reconciliations: ReconciliationOutcome[];
  invariantsBefore: unknown;
  invariantsAfter: unknown;
  /** Wallet pairs with transfers both ways (A→B and B→A): the crossing PY-09 is about. */
  crossedPairs: number;
}

async function crossedPairs(db: Database): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH moves AS (
       SELECT d.account_id AS source, c.account_id AS target
         FROM entries d JOIN entries c ON c.transaction_id = d.transaction_id AND c.direction = 'C'
         JOIN account_balances s ON s.account_id = d.account_id AND s.no_overdraft
         JOIN account_balances t ON t.account_id = c.account_id AND t.no_overdraft
        WHERE d.direction = 'D')
     SELECT count(*)::int4 AS n FROM (SELECT DISTINCT source, target FROM moves) a
      WHERE a.source < a.target AND EXISTS (SELECT 1 FROM moves b WHERE b.source = a.target AND b.target = a.source)`,
  );
  return rows[0]!.n;
}

/** Runs the load under faults, quiesces, reads both sides' records, stops the services, reconciles. */
async function runWorkload(t: TestContext, url: string, db: Database, schema: string): Promise<RunResult> {
  const acquirer = await startAcquirer({
    ACQUIRER_SEED: SEED,
    ACQUIRER_DECLINE_RATE: "0.05",
    ACQUIRER_LATENCY_MS: "2",
  });
  let services: ServiceCluster | undefined;
  try {
    services = await startServices(SERVICES, {
      DATABASE_URL: url,
      PAYMENTS_DB_SCHEMA: schema,
      PAYMENTS_DB_MAX_CONNECTIONS: "4",
      ACQUIRER_URL: acquirer.url,
      PAYMENTS_BOOTSTRAP_MERCHANT: "off",
      PAYMENTS_INLINE_DRIVE_MS: "1000",
      PAYMENTS_REFUND_RETRY_AFTER_MS: "300",
      PAYMENTS_BREAKER_OPEN_MODE: "accept",
    });
    const cluster = services;
    const world = await seedWorld(db, () => cluster.live());
    const tally = new Tally();
    const faults: string[] = [];
    const restarts: Promise<void>[] = [];
    const startMs = Date.now();
    await Promise.all([
      runClients(url, schema, world, tally, startMs + RUN_MS),
      runFaults(faultSchedule(acquirer, cluster, restarts), startMs, faults),
    ]);
    await acquirer.behave({
      outage: false,
      timeoutAfterChargeRate: 0,
      errorRate: 0,
      latencyMs: 0,
      latencyJitterMs: 0,
    });
    await Promise.all(restarts);
    const quietFromMs = Date.now();
    await quiesce(db, QUIESCE_TIMEOUT_MS);
    faults.push(`load ${RUN_MS} ms, then quiet after ${Date.now() - quietFromMs} ms`);
    const invariantsBefore = await checkLedgerInvariants(db).catch((error: unknown) => error);
    const rows = await paymentRows(db);
    const views = await acquirerViews(
      acquirer,
      rows.map((r) => r.acquirer_key),
    );
    const stats = await acquirer.stats();
    await cluster.stop(); // graceful: nothing may move while the day is reconciled
    const reconciliations = await reconcileDays(db, acquirer, startMs);
    const invariantsAfter = await checkLedgerInvariants(db).catch((error: unknown) => error);
    t.diagnostic(`seed ${SEED}; faults: ${faults.join("; ")}`);
    const crossed = await crossedPairs(db);
    return {
      tally,
      faults,
      stats,
      rows,
      views,
      reconciliations,
      invariantsBefore,
      invariantsAfter,
      crossedPairs: crossed,
    };
  } finally {
    await services?.stop();
    await acquirer.stop();
  }
}

/** Moves the simulator past the end of the run's last UTC day, then reconciles each day of the run. */
async function reconcileDays(db: Database, acquirer: AcquirerProcess, startMs: number) {
  const dates = utcDates(startMs, Date.now());
  const lastDayEndMs = Date.parse(`${dates.at(-1)}T00:00:00Z`) + DAY_MS;
  const acquirerNowMs = await acquirer.advance(Math.max(0, lastDayEndMs - Date.now()) + 1_000);
  const outcomes: ReconciliationOutcome[] = [];
  for (const date of dates)
    outcomes.push(await reconcileWithInjectedDifferences(db, acquirer, date, acquirerNowMs));
  return outcomes;
}

test("bank workload: 3 payments processes, 4 clients, acquirer timeouts and outage, SIGKILLed services", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema } = await openTestDb(t, url);
  const run = await runWorkload(t, url, db, schema!);
  const { tally, stats, rows, views } = run;
  t.diagnostic(`operations: ${tally.summary()}`);
  t.diagnostic(`acquirer: ${JSON.stringify(stats)}`);
  t.diagnostic(`payments by status: ${JSON.stringify(countBy(rows.map((r) => r.status)))}`);

  await t.test(
    "PY-05 every request got an answer a correct service gives (or none, while its owner was dead)",
    () => {
      assert.deepEqual(tally.unexpectedLines, [], `${tally.unexpectedCount} unexpected answers`);
      assert.ok(tally.total("payment.") >= AT_LEAST.payments, "the clients made payments");
      assert.ok(
        tally.get("http.no-answer") > 0,
        "some requests went unanswered: the crashes and timeouts happened",
      );
    },
  );

  await t.test(
    "PY-07 PY-09 PY-14 the ledger balances: each currency sums to 0, balances = entries, no wallet below 0",
    () => {
      assert.equal(run.invariantsBefore, undefined, String(run.invariantsBefore));
      assert.equal(
        run.invariantsAfter,
        undefined,
        `after reconciliation booked fees: ${String(run.invariantsAfter)}`,
      );
      assert.ok(tally.get("transfer.ok") >= AT_LEAST.transfers, "transfers ran");
      assert.ok(
        tally.get("transfer.insufficient-funds") > 0,
        "some transfers met an empty wallet and were refused",
      );
      assert.ok(run.crossedPairs > 0, "some wallet pairs moved money both ways");
    },
  );

  await t.test(
    "PY-06 PY-13 the acquirer saw one authorization call per key; every dropped response replayed identically",
    () => {
      assert.equal(stats.authorizationAttempts, stats.authorizations, "no key was authorized twice");
      const authorized = [...views.values()].filter((v) => v !== undefined).length;
      assert.equal(stats.authorizations, authorized, "every authorization belongs to one of our payments");
      assert.ok(views.size > 0 && [...views.values()].every((v) => v === undefined || v.attempts === 1));
      assert.ok(stats.faults.responsesLost > 0, "the acquirer charged and lost answers");
      assert.ok(stats.faults.outageRefusals + stats.faults.connectionResets > 0, "the outage happened");
      assert.deepEqual(tally.replayMismatches, []);
      assert.ok(tally.get("replay.checked") >= AT_LEAST.replays, "responses were dropped and replayed");
    },
  );

  await t.test(
    "PY-05 PY-12 PY-16 every saga ended in the state the acquirer records, its ledger hold settled to match",
    () => {
      assert.deepEqual(paymentMismatches(rows, views), []);
      assert.ok(
        tally.get("payment.pending") > 0,
        "some payments were answered 202 pending and finished later",
      );
      const statuses = new Set(rows.map((r) => r.status));
      for (const status of ["captured", "declined", "authorized"])
        assert.ok(statuses.has(status), `some ${status}`);
    },
  );

  await t.test(
    "PY-15 every refund agrees with the acquirer's refund of its key; none left pending",
    async () => {
      assert.deepEqual(await refundMismatches(db, views), []);
      assert.ok(tally.total("refund.") >= AT_LEAST.refunds, "refunds ran");
    },
  );

  await t.test(
    "PY-10 reconciliation reports exactly the differences injected into the day's settlement file",
    () => {
      for (const day of run.reconciliations) {
        t.diagnostic(`reconciled ${day.date}: ${day.fileRows} file rows, injected ${day.injected.length}`);
        assert.deepEqual(day.recorded, day.expected, `${day.date}: exceptions are the injected differences`);
        assert.equal(day.feeMismatches, 0, `${day.date}: fees booked at the contracted rate`);
      }
      assert.ok(
        run.reconciliations.some((day) => day.injected.length === 3),
        "a drop, a change and an unknown row",
      );
    },
  );
});

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
