/**
 * The saga orchestrator takes back at once its OWN sagas a database failure stranded, instead of
 * waiting out their lease (30 s here), and never takes a saga one of its drives still holds.
 *
 * Deterministic: one orchestrator driven round by round (`runOnce`, no loop), a ManualClock that
 * moves only when told (1 s after the failure: far inside the 30 s lease, so only a take-back can
 * claim the saga again), the acquirer simulator in-process, and a database wrapper that fails on
 * demand — refuses a step's commit (a transaction, or the step group's one statement), loses the answer of a statement that ran
 * (a claim committed, its caller saw an error), or holds commits until the test releases
 * them (a drive in flight). Each saga taken back asks the acquirer by its key before deciding:
 * the simulator counts exactly one authorization call per key (PY-05, PY-06).
 */
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database, Queryable, QueryResult, TransactionOptions } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { ManualClock, systemClock } from "@casebook/kit/clock";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { seededRandom } from "@casebook/kit/random";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { paymentErrors } from "../src/errors.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { createPayment, type Payment } from "../src/store/payment-repository.ts";
import { SagaOrchestrator } from "../src/workers/saga-orchestrator.ts";
import { type SimFixture, startSim } from "./acquirer-sim-fixture.ts";
import { FAST_BACKOFF, FAST_CLIENT, openTestDb, seedPayment, waitFor } from "./payment-fixture.ts";
import { testOnEngines } from "./payments-full-fixture.ts";

/**
 * A long lease (the default is 5 s, PAYMENTS_CLAIM_LEASE_MS, renewed while a step runs): long
 * enough that waiting it out would show, so only a take-back explains a saga resumed 1 s later.
 */
const DEFAULT_LEASE_MS = 30_000;
/** How long after the failure the test looks again: a small part of the lease. */
const AFTER_HEAL_MS = 1_000;
/** Bound on waiting for a drive to reach a held commit (an acquirer call on loopback, then the claim). */
const HELD_WAIT_MS = 10_000;

/** A group commit's one statement (store/saga-step-group.ts): its guard. */
const GROUP_STATEMENT = /payments_require\(/;

/** A Database that fails on demand; otherwise every call goes to the real one. */
class FlakyDatabase implements Database {
  readonly #db: Database;
  /**
   * A step's commit — a transaction, or a group's one statement (its guard calls
   * payments_require) — fails at once with SQL_UNAVAILABLE, before anything reaches the database.
   */
  failCommits = false;
  /** The next statement matching this runs, then its answer is lost (SQL_UNAVAILABLE); one shot. */
  loseAnswerOf: RegExp | undefined;
  /** A step's commit (as above) waits at its start until the test releases it (`held`). */
  holdCommits = false;
  readonly held: Array<() => void> = [];

  constructor(db: Database) {
    this.#db = db;
  }

  get engine() {
    return this.#db.engine;
  }

  get schema() {
    return this.#db.schema;
  }

  async query<Row = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<Row>> {
    if (GROUP_STATEMENT.test(text)) await this.#commitGate();
    const result = await this.#db.query<Row>(text, params);
    if (this.loseAnswerOf?.test(text)) {
      this.loseAnswerOf = undefined;
      throw unavailable("the answer was lost after the statement ran");
    }
    return result;
  }

  exec(script: string): Promise<void> {
    return this.#db.exec(script);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
    await this.#commitGate();
    return this.#db.transaction(fn, options);
  }

  async #commitGate(): Promise<void> {
    if (this.holdCommits) await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.failCommits) throw unavailable("the connection was reset");
  }

  ping(timeoutMs?: number): Promise<void> {
    return this.#db.ping(timeoutMs);
  }

  close(): Promise<void> {
    return this.#db.close();
  }

  /** Resolves once `count` commits wait to be released (a drive got there: its acquirer call is over). */
  async heldCount(count: number): Promise<void> {
    await waitFor(async () => (this.held.length >= count ? true : undefined), HELD_WAIT_MS, 5);
  }

  /** Lets the newest held commit go on. */
  releaseNewest(): void {
    const release = this.held.pop();
    if (release === undefined) throw new Error("no held commit to release");
    release();
  }

  /** Lets the oldest held commit go on. */
  releaseOne(): void {
    const release = this.held.shift();
    if (release === undefined) throw new Error("no held commit to release");
    release();
  }
}

function unavailable(detail: string): Error {
  return sqlErrors.create("SQL_UNAVAILABLE", { detail });
}

interface Rig {
  db: Database;
  flaky: FlakyDatabase;
  sim: SimFixture;
  clock: ManualClock;
  idempotency: IdempotencyStore;
  orchestrator: SagaOrchestrator;
  /** `step:outcome` of every step driven, in order. */
  steps: string[];
  /** What the orchestrator reported (drives that failed). */
  errors: unknown[];
  merchant: string;
}

async function rig(t: TestContext, url: string | undefined): Promise<Rig> {
  const { db } = await openTestDb(t, url);
  const flaky = new FlakyDatabase(db);
  const sim = await startSim(t);
  // FAST_CLIENT's phases of seconds: a stall of the loaded host is no timeout, so the steps are exact.
  // The lease is set below.
  const acquirer = new AcquirerClient({
    baseUrl: sim.url,
    clock: systemClock,
    random: seededRandom("saga-giveback"),
    ...FAST_CLIENT,
  });
  t.after(() => acquirer.close());
  // Past every row seedPayment writes with the wall clock, so seeded sagas are due.
  const clock = new ManualClock(Date.now() + 5_000);
  const idempotency = paymentsIdempotencyStore(db, { clock });
  const steps: string[] = [];
  const errors: unknown[] = [];
  const orchestrator = new SagaOrchestrator({
    db: flaky,
    acquirer,
    idempotency,
    clock,
    random: seededRandom("saga-giveback-orchestrator"),
    owner: "giveback-1",
    leaseMs: DEFAULT_LEASE_MS,
    // Two lanes: two drives' commits of one saga can then be in flight (held) at once.
    stepGroup: { lanes: 2 },
    backoff: FAST_BACKOFF,
    observer: { stepFinished: (step, outcome) => steps.push(`${step}:${outcome}`) },
    onError: (error) => errors.push(error),
  });
  assert.equal(orchestrator.leaseMs, DEFAULT_LEASE_MS);
  return { db, flaky, sim, clock, idempotency, orchestrator, steps, errors, merchant: "m-giveback" };
}

async function sagaRow(db: Database, id: bigint) {
  const { rows } = await db.query<{
    step: string;
    status: string;
    lease_owner: string | null;
    lease_expires_at: Date | null;
    lease_version: bigint;
  }>("SELECT step, status, lease_owner, lease_expires_at, lease_version FROM payments WHERE id = $1", [id]);
  return rows[0]!;
}

async function authorizationCalls(sim: SimFixture): Promise<{ attempts: unknown; authorizations: unknown }> {
  const stats = (await sim.call("GET", "/v1/stats")).body;
  return { attempts: stats.authorizationAttempts, authorizations: stats.authorizations };
}

/**
 * A payment created as POST /v1/payments creates it: its key begun, the saga leased to this
 * orchestrator (its inline drive not begun yet) from the clock reading `nowMs`.
 */
async function createLeased(r: Rig, key: string, amountMinor: bigint, nowMs: number): Promise<Payment> {
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/payments", body: { key } });
  const begun = await r.idempotency.begin({ scope: r.merchant, key, fingerprint });
  if (begun.kind !== "started") throw new Error(`createLeased: key ${key} already used`);
  return r.db.transaction((tx) =>
    createPayment(tx, {
      merchantId: r.merchant,
      idempotencyKey: key,
      amountMinor,
      currency: "BRL",
      cardToken: "tok_visa_4242",
      capture: true,
      idemGeneration: begun.lease.generation,
      nowMs,
      leaseOwner: r.orchestrator.owner,
      leaseMs: r.orchestrator.leaseMs,
    }),
  );
}

/** Seeds a saga and lets its first drive authorize, then fail to commit: it stays leased to the orchestrator. */
async function strandAfterAuthorize(r: Rig, key: string): Promise<bigint> {
  const id = await seedPayment(r.db, r.idempotency, { merchant: r.merchant, key, amountMinor: 5_000n });
  r.flaky.failCommits = true;
  assert.equal(await r.orchestrator.runOnce(), 1, "the saga is claimed");
  r.flaky.failCommits = false;
  const row = await sagaRow(r.db, id);
  assert.deepEqual([row.step, row.lease_owner], ["authorize", "giveback-1"], "stranded, leased to its owner");
  assert.equal(row.lease_expires_at?.getTime(), r.clock.nowMs() + DEFAULT_LEASE_MS);
  assert.ok(
    r.errors.length > 0 && r.errors.every((e) => sqlErrors.is(e, "SQL_UNAVAILABLE")),
    "the drive failed on the database",
  );
  return id;
}

testOnEngines(
  "PY-05 PY-06 a saga whose step commit the database failed is taken back at once after the heal, asked about by key, authorized once",
  async (t, url) => {
    const r = await rig(t, url);
    const id = await strandAfterAuthorize(r, "commit-failed");
    r.clock.advance(AFTER_HEAL_MS);
    assert.equal(await r.orchestrator.runOnce(), 1, "taken back 1 s after the failure, not after 30 s");
    const row = await sagaRow(r.db, id);
    assert.deepEqual([row.step, row.status, row.lease_owner], ["done", "captured", null]);
    assert.deepEqual(r.steps, ["authorize:error", "query:approved", "capture:captured"]);
    assert.deepEqual(await authorizationCalls(r.sim), { attempts: 1, authorizations: 1 });
  },
);

testOnEngines(
  "PY-05 PY-06 a saga whose claim committed but whose answer was lost is taken back at once after the heal",
  async (t, url) => {
    const r = await rig(t, url);
    const id = await seedPayment(r.db, r.idempotency, {
      merchant: r.merchant,
      key: "claim-lost",
      amountMinor: 7_000n,
    });
    r.flaky.loseAnswerOf = /UPDATE "payments" t\s+SET lease_owner/; // the saga claim
    await assert.rejects(r.orchestrator.runOnce(), (e) => sqlErrors.is(e, "SQL_UNAVAILABLE"));
    const stranded = await sagaRow(r.db, id);
    assert.equal(stranded.lease_owner, "giveback-1", "the claim committed");
    assert.deepEqual(r.steps, [], "nothing was driven");
    r.clock.advance(AFTER_HEAL_MS);
    assert.equal(await r.orchestrator.runOnce(), 1, "taken back 1 s after the failure, not after 30 s");
    const row = await sagaRow(r.db, id);
    assert.deepEqual([row.step, row.status], ["done", "captured"]);
    // Taken back, so it asks first: the acquirer has never seen the key, and only then is it authorized.
    assert.deepEqual(r.steps, ["query:not-found", "authorize:approved", "capture:captured"]);
    assert.deepEqual(await authorizationCalls(r.sim), { attempts: 1, authorizations: 1 });
  },
);

testOnEngines(
  "PY-05 a saga its own drive holds is never taken back, nor one the API leased to it after the failure",
  async (t, url) => {
    const r = await rig(t, url);
    const stranded = await strandAfterAuthorize(r, "held-drive");
    r.clock.advance(AFTER_HEAL_MS);
    // As POST /v1/payments does: the payment is created leased to this orchestrator, its inline drive not begun yet.
    const created = await createLeased(r, "api-created", 3_000n, r.clock.nowMs());
    r.flaky.holdCommits = true;
    const takingBack = r.orchestrator.runOnce();
    await r.flaky.heldCount(1); // the stranded saga's drive, taken back, waits to commit its query's outcome
    assert.equal(r.orchestrator.drivingCount, 1);
    assert.equal(
      await r.orchestrator.runOnce(),
      0,
      "neither the saga in flight nor the API's new one is taken",
    );
    r.flaky.holdCommits = false;
    r.flaky.releaseOne();
    assert.equal(await takingBack, 1);
    assert.equal((await sagaRow(r.db, stranded)).status, "captured");
    // The API's drive starts from its creation lease: untouched, so it commits every step.
    assert.equal((await sagaRow(r.db, created.id)).lease_version, created.leaseVersion);
    const driven = await r.orchestrator.drive({ ...created, takenOver: false });
    assert.deepEqual([driven.step, driven.status], ["done", "captured"]);
    assert.deepEqual(await authorizationCalls(r.sim), { attempts: 2, authorizations: 2 });
    assert.equal(r.orchestrator.drivingCount, 0);
  },
);

testOnEngines(
  "PY-05 PY-06 a drive fenced by a newer claim of the same saga does not unlist it: no round takes it meanwhile",
  async (t, url) => {
    const r = await rig(t, url);
    const id = await strandAfterAuthorize(r, "two-claims");
    r.clock.advance(AFTER_HEAL_MS);
    r.flaky.holdCommits = true;
    // Two inline drives of the same saga (a client retry and a capture, say): the second claim fences the first.
    const first = r.orchestrator.driveById(id);
    await r.flaky.heldCount(1);
    const second = r.orchestrator.driveById(id);
    await r.flaky.heldCount(2);
    // The first drive's group commits against a version the second claim bumped: refused whole, so
    // its step goes alone — a transaction of its own, held too — and finds the lease lost there.
    r.flaky.releaseOne();
    await r.flaky.heldCount(2);
    r.flaky.releaseNewest();
    await assert.rejects(first, (e: unknown) => paymentErrors.is(e, "PAYMENTS_SAGA_LEASE_LOST"));
    assert.equal(r.orchestrator.drivingCount, 1, "the second claim is still listed");
    assert.equal(await r.orchestrator.runOnce(), 0, "the saga the second drive holds is not taken back");
    r.flaky.holdCommits = false;
    r.flaky.releaseOne();
    const driven = await second;
    assert.deepEqual([driven?.step, driven?.status], ["done", "captured"]);
    // Both claims found it leased, so both asked by key first: one authorization call in all.
    assert.deepEqual(r.steps, ["authorize:error", "query:error", "query:approved", "capture:captured"]);
    assert.deepEqual(await authorizationCalls(r.sim), { attempts: 1, authorizations: 1 });
  },
);

testOnEngines(
  "PY-05 PY-06 an inline drive handed a lease the database held up past its end calls nothing: the orchestrator that claimed the saga meanwhile authorizes it, once",
  async (t, url) => {
    const r = await rig(t, url);
    // As POST /v1/payments does, but its create committed a whole lease after the request read the
    // clock (a stalled link delivering the COMMIT late): the creation lease is already over.
    const created = await createLeased(r, "late-create", 4_000n, r.clock.nowMs() - DEFAULT_LEASE_MS - 1);
    // Another orchestrator saw the lapsed lease first and drove the saga: asked by key, authorized.
    const otherAcquirer = new AcquirerClient({
      baseUrl: r.sim.url,
      clock: systemClock,
      random: seededRandom("other"),
      ...FAST_CLIENT,
    });
    t.after(() => otherAcquirer.close());
    const other = new SagaOrchestrator({
      db: r.db,
      acquirer: otherAcquirer,
      idempotency: r.idempotency,
      clock: r.clock,
      random: seededRandom("saga-giveback-other"),
      owner: "giveback-2",
      leaseMs: DEFAULT_LEASE_MS,
      backoff: FAST_BACKOFF,
      onError: (error) => r.errors.push(error),
    });
    assert.equal(await other.runOnce(), 1, "the other orchestrator claims the lapsed saga");
    assert.equal((await sagaRow(r.db, created.id)).status, "captured");
    // The request's own drive now starts from its creation lease: it must not call the acquirer.
    await assert.rejects(r.orchestrator.drive({ ...created, takenOver: false }), (e) =>
      paymentErrors.is(e, "PAYMENTS_SAGA_LEASE_LOST"),
    );
    assert.deepEqual(await authorizationCalls(r.sim), { attempts: 1, authorizations: 1 });
  },
);
