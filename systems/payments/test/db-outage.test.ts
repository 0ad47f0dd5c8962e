/**
 * Fault test: PostgreSQL goes away under a running payments service, and comes back.
 *
 * On real PostgreSQL (a fresh schema), the real composition root runs as a PROCESS
 * (bank-workload-service-child.ts: auth, routes, saga orchestrator, refund retrier, outbox relay)
 * with DATABASE_URL pointing at lab's TCP fault proxy in front of PostgreSQL; the acquirer
 * simulator runs in a process of its own at 50 ms per call, so some sagas are mid-flight when the
 * link fails. A client sends POST /v1/payments at a steady rate, each with its own Idempotency-Key.
 *
 * Three faults, one test each: the link is CUT (every connection reset, new ones refused); the
 * link is BLACKHOLED (connections accepted, nothing answered: only the pool's timeouts end a wait;
 * what was sent is delivered when the link heals, as TCP would retransmit it) until the service
 * has given up on everything in flight; the link STALLS the same way but heals before the
 * service's timeouts, so what was in flight goes through late.
 *
 * While the database is unreachable: POST /v1/payments answers 503 SQL_UNAVAILABLE (never another
 * 5xx, never a hang to the handler timeout), /readyz answers 503, /healthz 200, the process lives,
 * and the workers back off instead of hammering the pool and the log. After it heals: /readyz is
 * ready again within a bound; a client retrying each 503'd request with its Idempotency-Key gets
 * exactly one payment; every payment ends terminal and agrees with the acquirer, which saw one
 * authorization call per key; the ledger balances; no idempotency claim is left half-done; every
 * event the sagas wrote to the outbox is published.
 *
 * The cut and the blackhole run the service with its DEFAULT leases (a saga's: 30 s), and catch
 * sagas in the orchestrator's hands when the link fails: those must finish soon after the heal,
 * well within the lease they still hold — the orchestrator takes its own stranded sagas back at
 * once instead of waiting it out (saga-giveback.test.ts forces each way they are stranded).
 *
 * The load meets the rarer interleavings only when the fault happens to land on them, so two more
 * tests force them on purpose: a request's idempotency claim left behind by the failure (its
 * release refused, or its INSERT delivered by the healing link after the request answered 503) is
 * given back after the heal; the outbox relay takes back at once a key it held when the database
 * failed mid-batch, instead of waiting out its lease.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createLogger } from "@casebook/infra/http/logger";
import {
  beginClaim,
  pendingClaimCleanups,
  releaseAfterFailure,
} from "@casebook/infra/sql/idempotency-claim-release";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { systemClock } from "@casebook/kit/clock";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { type RandomSource, seededRandom } from "@casebook/kit/random";
import { type FaultProxy, startFaultProxy } from "@casebook/lab/fault-proxy";
import { freePort } from "@casebook/lab/free-port";
import { spawnChild } from "@casebook/lab/spawn-child";
import { requirePostgres } from "@casebook/lab/test-engines";
import { idempotencyErrors } from "../src/errors.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import { enqueue } from "../src/store/outbox.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { acquirerViews, paymentMismatches, paymentRows, quiesce } from "./bank-workload-checks.ts";
import { type AcquirerProcess, startAcquirer } from "./bank-workload-cluster.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";
import { openTestDb, waitFor } from "./payment-fixture.ts";

const SERVICE_CHILD = fileURLToPath(new URL("./bank-workload-service-child.ts", import.meta.url));
/**
 * The same service with the default call deadline and a long lease: crashTestTuning without its
 * lease and call-deadline settings, and PAYMENTS_CLAIM_LEASE_MS = 30 s (the default is 5 s,
 * renewed while a step runs): a lease long enough that waiting it out would show, so the test
 * sees the orchestrator take its stranded sagas back at once instead.
 * Run as an inline ES module: the service child's file always applies the crash-test leases.
 */
const DEFAULT_LEASES_CHILD = `
const { main } = await import(${JSON.stringify(new URL("../src/main.ts", import.meta.url).href)});
const { crashTestTuning } = await import(${JSON.stringify(new URL("./bank-workload-service-child.ts", import.meta.url).href)});
const { installSignalHandlers } = await import(${JSON.stringify(import.meta.resolve("@casebook/infra/http/shutdown"))});
const { callDeadlineMs: _deadline, ...acquirer } = crashTestTuning.acquirer;
const { leaseMs: _sagaLease, ...saga } = crashTestTuning.saga;
const { leaseMs: _refundLease, ...refunds } = crashTestTuning.refunds;
const running = await main(process.env, { acquirer, saga, refunds });
installSignalHandlers(running.service);
`;
/** The saga lease of DEFAULT_LEASES_CHILD (PAYMENTS_CLAIM_LEASE_MS). */
const DEFAULT_SAGA_LEASE_MS = 30_000;
/** Sagas in the orchestrator's hands when the fault begins: the test waits for this many first. */
const MIN_IN_HAND_AT_FAULT = 2;
/** Bound on a saga in hand at the fault finishing after the heal: a third of its 30 s lease. */
const IN_HAND_DONE_AFTER_HEAL_MAX_MS = DEFAULT_SAGA_LEASE_MS / 3;

/**
 * One POST every 20–60 ms (seeded), open loop (a slow answer does not slow the sender): jittered,
 * so the fault finds requests at every stage — claiming the key, in the payment's transaction,
 * at the acquirer, persisting the saga — not the same stage on every run.
 */
const SEND_INTERVAL_MIN_MS = 20;
const SEND_INTERVAL_MAX_MS = 60;
/** Bound on the requests of one run, outage included. */
const MAX_REQUESTS = 1_000;
/** Load before the fault: long enough for payments to be flowing and sagas mid-flight. */
const WARMUP_MS = 1_200;
/** Shortest outage: the workers meet several failed rounds, the clients several 503s. */
const MIN_OUTAGE_MS = 2_500;
/** Load after the heal, so the run shows payments flowing again. */
const HEALED_LOAD_MS = 1_500;
/** Server-side statement timeout given to the service; on a silent link the driver adds 5 s (pg-database.ts). */
const STATEMENT_TIMEOUT_MS = 1_000;
/** What the driver waits past the statement timeout on a silent link (pg-database.ts QUERY_TIMEOUT_GRACE_MS). */
const DRIVER_GRACE_MS = 5_000;
/** Bound on opening a connection, and on waiting for a pool slot. */
const CONNECT_TIMEOUT_MS = 1_000;
/** A request must be answered well inside the service's 30 s handler timeout. */
const REQUEST_TIMEOUT_MS = 20_000;
/** /readyz answers ready again within this after the heal. */
const READY_AFTER_HEAL_MS = 10_000;
/** Bound on retrying one 503'd key until it gets its final answer. */
const RETRY_KEY_TIMEOUT_MS = 15_000;
/** Keys retried at once after the heal. */
const RETRY_CONCURRENCY = 8;
/** Bound on every saga finishing once the database is back. */
const QUIESCE_TIMEOUT_MS = 20_000;
/** Bound on a claim being given back after the heal: a few backoff rounds, far below its 60 s lease. */
const CLAIM_CLEANUP_TIMEOUT_MS = 10_000;
/** Bound on the relay taking back its own orphaned key: a few loop rounds, far below its 30 s lease. */
const OUTBOX_RECLAIM_TIMEOUT_MS = 10_000;
/** Bound on the outbox relay publishing everything once the database is back. */
const OUTBOX_DRAIN_TIMEOUT_MS = 20_000;
/** Child start on a loaded 2-core machine: TypeScript stripping, migrations check, listen. */
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
/**
 * The workers' failed rounds per second of outage, all three loops together. Their idle polls are
 * 25 ms (saga), 50 ms (refunds) and 200 ms (outbox) in this tuning: retrying at those rates is
 * ~65/s. Backing off (workers/loop-backoff.ts: the poll doubling per failure, equal jitter, so at
 * least half of it) they fail at most 7 + 6 + 5 times in the first 2.5 s, then once per 1–2 s
 * each: at most ~8/s over the shortest outage, and less the longer it lasts.
 */
const MAX_WORKER_FAILURES_PER_S = 10;

/** Bound on the log lines kept from the service (the test reads only the workers' failures). */
const MAX_LOG_LINES = 50_000;
/**
 * The workers' loop-failure lines (main.ts's onError hooks): one per failed round of the saga
 * orchestrator, the refund retrier and the outbox relay.
 */
const WORKER_FAILURE =
  /saga step failed; the saga is (retried|taken back)|refund retry round failed|event publish failed/;

interface LogLine {
  timeMs: number;
  level: string;
  msg: string;
  /** The logged error's type, code and message, when the line carries one. */
  err: string | undefined;
}

interface ServiceProcess {
  readonly url: string;
  /** True while the process has neither exited nor been killed. */
  alive(): boolean;
  /** The JSON log lines it wrote so far (warn and above: the child runs with LOG_LEVEL=warn). */
  readonly lines: readonly LogLine[];
  /** Exit status, stderr tail and the last log lines: what a failure message needs. */
  describe(): string;
  stop(): Promise<void>;
}

/**
 * Starts the real service as a child process on a free port; resolves once /readyz answers 200.
 * `defaultLeases`: with the production leases (DEFAULT_LEASES_CHILD), not the crash-test ones.
 */
async function startServiceProcess(env: NodeJS.ProcessEnv, defaultLeases: boolean): Promise<ServiceProcess> {
  const port = await freePort();
  const lines: LogLine[] = [];
  const onLine = (text: string) => {
    if (lines.length >= MAX_LOG_LINES) return;
    try {
      // The service logs pino JSON with an ISO time and the level's label (infra/http/logger.ts).
      const line = JSON.parse(text) as {
        time?: string;
        level?: string;
        msg?: string;
        err?: { type?: string; message?: string; code?: string };
      };
      const timeMs = line.time === undefined ? Date.now() : Date.parse(line.time);
      const err =
        line.err && `${line.err.type} ${line.err.code ?? ""} ${line.err.message ?? ""}`.slice(0, 300);
      lines.push({ timeMs, level: line.level ?? "", msg: line.msg ?? "", err });
    } catch {
      lines.push({ timeMs: Date.now(), level: "", msg: text, err: undefined });
    }
  };
  // Ready is /readyz below, not a line; the log goes to onLine only, stderr's tail is kept unechoed.
  const spawned = await spawnChild(defaultLeases ? { code: DEFAULT_LEASES_CHILD } : SERVICE_CHILD, {
    args: defaultLeases ? [] : [String(port)],
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      ...(defaultLeases ? { PAYMENTS_CLAIM_LEASE_MS: String(DEFAULT_SAGA_LEASE_MS) } : {}),
      ...env,
      PORT: String(port),
    },
    ready: false,
    queueLines: false,
    onLine,
    echoStderr: false,
    maxStderrBytes: 4_000,
    stopTimeoutMs: STOP_TIMEOUT_MS,
  });
  spawned.process.stdin.end(); // no input, as stdin "ignore" gave
  const child = spawned.process;
  const stderr = () => spawned.stderr();
  const alive = () => child.exitCode === null && child.signalCode === null;
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (!alive()) throw new Error(`service exited while starting: ${stderr()}`);
      const res = await probe(url, "/readyz");
      return res.status === 200 ? true : undefined;
    },
    START_TIMEOUT_MS,
    50,
  );
  return {
    url,
    alive,
    lines,
    describe: () =>
      `exit ${child.exitCode ?? "-"} signal ${child.signalCode ?? "-"}; stderr: ${stderr()}; log tail: ` +
      lines
        .slice(-8)
        .map((l) => `${l.level} ${l.msg}`)
        .join(" | "),
    stop: () => spawned.stop(),
  };
}

/** GET an ops route; a network error or a timeout is status 0. */
async function probe(base: string, path: string): Promise<{ status: number; elapsedMs: number }> {
  const startMs = Date.now();
  try {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5_000) });
    await res.body?.cancel();
    return { status: res.status, elapsedMs: Date.now() - startMs };
  } catch {
    return { status: 0, elapsedMs: Date.now() - startMs };
  }
}

interface Answer {
  status: number;
  /** The problem's code on an error, undefined on success. */
  code: string | undefined;
  /** The payment's id on a 2xx. */
  paymentId: string | undefined;
  error: string | undefined;
  elapsedMs: number;
}

interface Sent {
  key: string;
  body: Record<string, unknown>;
  sentAtMs: number;
  answer?: Answer;
}

/** POST /v1/payments with its key; never throws (a network failure is status 0 with `error`). */
async function postPayment(
  base: string,
  apiKey: string,
  key: string,
  body: Record<string, unknown>,
): Promise<Answer> {
  const startMs = Date.now();
  try {
    const res = await fetch(`${base}/v1/payments`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": "application/json",
        "idempotency-key": key,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    const json = (text === "" ? {} : JSON.parse(text)) as { code?: string; id?: string };
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: res.status,
      code: ok ? undefined : json.code,
      paymentId: ok ? json.id : undefined,
      error: undefined,
      elapsedMs: Date.now() - startMs,
    };
  } catch (error) {
    const elapsedMs = Date.now() - startMs;
    return { status: 0, code: undefined, paymentId: undefined, error: String(error), elapsedMs };
  }
}

/** An open-loop sender: one new key every 20–60 ms until stopped. */
class PaymentLoad {
  readonly sent: Sent[] = [];
  readonly #answers: Promise<void>[] = [];
  #stopped = false;
  #loop: Promise<void> | undefined;

  readonly #base: string;
  readonly #apiKey: string;
  readonly #prefix: string;
  readonly #random: RandomSource;

  constructor(base: string, apiKey: string, prefix: string) {
    this.#base = base;
    this.#apiKey = apiKey;
    this.#prefix = prefix;
    this.#random = seededRandom(`db-outage:${prefix}`);
  }

  start(): void {
    this.#loop = (async () => {
      for (let i = 0; i < MAX_REQUESTS && !this.#stopped; i++) {
        const entry: Sent = {
          key: `${this.#prefix}-${i}`,
          body: { amountMinor: String(1_000 + i), currency: "USD", cardToken: "tok_visa", capture: true },
          sentAtMs: Date.now(),
        };
        this.sent.push(entry);
        this.#answers.push(
          postPayment(this.#base, this.#apiKey, entry.key, entry.body).then((answer) => {
            entry.answer = answer;
          }),
        );
        await sleep(
          SEND_INTERVAL_MIN_MS + this.#random.next() * (SEND_INTERVAL_MAX_MS - SEND_INTERVAL_MIN_MS),
        );
      }
    })();
  }

  /** Stops sending and waits for every answer. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
    await Promise.all(this.#answers);
  }

  /** How many requests got a 2xx so far. */
  successes(): number {
    return this.sent.filter((s) => s.answer !== undefined && s.answer.status < 300 && s.answer.status >= 200)
      .length;
  }
}

const isSuccess = (a: Answer | undefined) => a !== undefined && a.status >= 200 && a.status < 300;
const isUnavailable = (a: Answer | undefined) => a?.status === 503 && a.code === "SQL_UNAVAILABLE";

/** Retries one key (same key, same body) until it gets a 2xx; 409 and 503 mean "not yet". */
/** Retries one key; `firstStatus` records its first retry's status (409: a claim or saga still in flight). */
async function retryUntilFinal(
  base: string,
  apiKey: string,
  sent: Sent,
  firstStatus: Map<string, number>,
): Promise<Answer> {
  const untilMs = Date.now() + RETRY_KEY_TIMEOUT_MS;
  let last: Answer | undefined;
  for (let attempt = 0; Date.now() < untilMs; attempt++) {
    last = await postPayment(base, apiKey, sent.key, sent.body);
    if (attempt === 0) firstStatus.set(sent.key, last.status);
    if (isSuccess(last)) return last;
    const transient = last.status === 409 || last.status === 503;
    if (!transient) break;
    await sleep(Math.min(1_000, 50 * 2 ** attempt));
  }
  throw new Error(`key ${sent.key}: no final answer; last ${JSON.stringify(last)}`);
}

/** Retries every unanswered or 503'd request, RETRY_CONCURRENCY keys at a time; the final answer of each. */
async function retryAll(
  base: string,
  apiKey: string,
  failed: readonly Sent[],
  firstStatus: Map<string, number>,
): Promise<Map<string, Answer>> {
  const retried = new Map<string, Answer>();
  let next = 0;
  const worker = async () => {
    while (next < failed.length) {
      const sent = failed[next++]!;
      retried.set(sent.key, await retryUntilFinal(base, apiKey, sent, firstStatus));
    }
  };
  await Promise.all(Array.from({ length: RETRY_CONCURRENCY }, worker));
  return retried;
}

interface Fault {
  name: string;
  begin(proxy: FaultProxy): Promise<void>;
  /**
   * Heal when `outageMs` is over even while requests still wait on the link (a stall shorter than
   * the service's timeouts: what they sent goes through late); otherwise heal no sooner than the
   * probe POST got its 503.
   */
  healBeforeTimeouts: boolean;
  /** How long the fault lasts at least; default MIN_OUTAGE_MS. */
  outageMs?: number;
  /**
   * Run the service with its default leases and begin the fault with sagas in hand, which must
   * finish soon after the heal, well within their lease. The stall keeps the crash-test 2.5 s
   * lease: it is there to outlive it (an orchestrator takes over a saga a stalled drive holds).
   */
  defaultLeases: boolean;
}

const CUT: Fault = {
  name: "cut",
  begin: async (proxy) => {
    await proxy.refuse(true);
    proxy.cutAll();
  },
  healBeforeTimeouts: false,
  defaultLeases: true,
};

/** Silent long enough that every statement in flight at its start has timed out in the driver. */
const BLACKHOLE: Fault = {
  name: "blackhole",
  begin: async (proxy) => proxy.blackhole(true, "hold"),
  healBeforeTimeouts: false,
  outageMs: STATEMENT_TIMEOUT_MS + DRIVER_GRACE_MS + 1_000,
  defaultLeases: true,
};

/**
 * Silent for less than the driver's timeout but longer than a saga's lease (2.5 s) and the
 * statement timeout: after the heal, statements sent before it run late, a saga driven inline may
 * meet an orchestrator that took it over, statements that waited on a stalled transaction's locks
 * were cancelled by the server — each must still end in 2xx or 503 SQL_UNAVAILABLE.
 */
const STALL: Fault = {
  name: "stall",
  begin: async (proxy) => proxy.blackhole(true, "hold"),
  healBeforeTimeouts: true,
  outageMs: 3_000,
  defaultLeases: false,
};

interface OutageRun {
  sent: Sent[];
  faultAtMs: number;
  healedAtMs: number;
  probe: Answer;
  readyDuring: { status: number; elapsedMs: number };
  healthDuring: { status: number; elapsedMs: number };
  aliveDuring: boolean;
  readyAfterHealMs: number;
  workerFailuresDuring: LogLine[];
  retried: Map<string, Answer>;
  aliveAfter: boolean;
  /** The service's "request failed" lines with their error, for failure messages. */
  serviceErrors: string[];
  /** Sagas leased and unfinished when the fault began (read on a direct connection), with their lease's end. */
  inHandAtFault: InHandSaga[];
}

interface InHandSaga {
  id: bigint;
  leaseExpiresAtMs: number;
}

/** Unfinished sagas an orchestrator holds a lease on, read on `db` (a direct connection). */
async function sagasInHand(db: Database): Promise<InHandSaga[]> {
  const { rows } = await db.query<{ id: bigint; lease_expires_at: Date }>(
    "SELECT id, lease_expires_at FROM payments WHERE step <> 'done' AND lease_owner IS NOT NULL ORDER BY id",
  );
  return rows.map((r) => ({ id: r.id, leaseExpiresAtMs: r.lease_expires_at.getTime() }));
}

/** When each of `ids` finished (epoch ms; NaN while unfinished). */
async function finishedAt(db: Database, ids: readonly bigint[]): Promise<number[]> {
  const { rows } = await db.query<{ finished_at: Date | null }>(
    "SELECT finished_at FROM payments WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)::int8) ORDER BY id",
    [JSON.stringify(ids.map(String))],
  );
  return rows.map((r) => r.finished_at?.getTime() ?? Number.NaN);
}

/** The load, the fault, the probes during it, the heal, the retries; the checks come after. */
async function runOutage(
  t: TestContext,
  fault: Fault,
  service: ServiceProcess,
  proxy: FaultProxy,
  apiKey: string,
  db: Database,
): Promise<OutageRun> {
  const load = new PaymentLoad(service.url, apiKey, `${fault.name}-k`);
  load.start();
  await sleep(WARMUP_MS);
  await waitFor(async () => (load.successes() >= 3 ? true : undefined), 10_000, 20);
  // With the default leases the fault begins with sagas in hand (at 50 ms per acquirer call there are some most of the time).
  if (fault.defaultLeases)
    await waitFor(
      async () => ((await sagasInHand(db)).length >= MIN_IN_HAND_AT_FAULT ? true : undefined),
      10_000,
      5,
    );
  const faultAtMs = Date.now();
  await fault.begin(proxy);
  // The service can write nothing now: what is leased and unfinished was in hand at the fault.
  const inHandAtFault = fault.defaultLeases ? await sagasInHand(db) : [];
  // What a client sees while the database is gone. Event-driven: unless the fault is a short
  // stall, the link heals only once the service gave up on it (a blackhole: statement timeout +
  // the driver's grace), never before.
  const probing = Promise.all([
    postPayment(service.url, apiKey, `${fault.name}-probe`, {
      amountMinor: "777",
      currency: "USD",
      cardToken: "tok_visa",
      capture: true,
    }),
    probe(service.url, "/readyz"),
    probe(service.url, "/healthz"),
  ]);
  if (!fault.healBeforeTimeouts) await probing;
  const outageLeftMs = faultAtMs + (fault.outageMs ?? MIN_OUTAGE_MS) - Date.now();
  if (outageLeftMs > 0) await sleep(outageLeftMs);
  const aliveDuring = service.alive();
  const healedAtMs = Date.now();
  await proxy.heal();
  const [probeAnswer, readyDuring, healthDuring] = await probing;
  const ready = await waitFor(
    async () => ((await probe(service.url, "/readyz")).status === 200 ? Date.now() : undefined),
    READY_AFTER_HEAL_MS + 5_000,
    50,
  ).catch(async (error: unknown) => {
    throw new Error(`not ready after the heal: ${service.describe()}`, { cause: error });
  });
  await sleep(HEALED_LOAD_MS);
  await load.stop();
  const workerFailuresDuring = service.lines.filter(
    (l) => l.timeMs >= faultAtMs && l.timeMs <= healedAtMs && WORKER_FAILURE.test(l.msg),
  );
  // Every request that did not get a 2xx is retried with its key, as a client must.
  const probeSent: Sent = {
    key: `${fault.name}-probe`,
    body: { amountMinor: "777", currency: "USD", cardToken: "tok_visa", capture: true },
    sentAtMs: faultAtMs,
    answer: probeAnswer,
  };
  const sent = [...load.sent, probeSent];
  const retryStartMs = Date.now();
  const firstRetryStatus = new Map<string, number>();
  const retried = await retryAll(
    service.url,
    apiKey,
    sent.filter((s) => !isSuccess(s.answer)),
    firstRetryStatus,
  );
  t.diagnostic(
    `${fault.name}: ${sent.length} requests, ${sent.filter((s) => isUnavailable(s.answer)).length} answered 503 SQL_UNAVAILABLE, ` +
      `probe ${probeAnswer.status} ${probeAnswer.code} in ${probeAnswer.elapsedMs} ms, ready ${ready - healedAtMs} ms after heal, ` +
      `${workerFailuresDuring.length} worker failure lines in ${healedAtMs - faultAtMs} ms of outage ` +
      `(${service.lines.length} log lines in all: ${JSON.stringify(countBy(service.lines.map((l) => l.msg)))}); ` +
      `${retried.size} keys retried in ${Date.now() - retryStartMs} ms, ` +
      `first retry answers ${JSON.stringify(countBy([...firstRetryStatus.values()].map(String)))}`,
  );
  return {
    sent,
    faultAtMs,
    healedAtMs,
    probe: probeAnswer,
    readyDuring,
    healthDuring,
    aliveDuring,
    readyAfterHealMs: ready - healedAtMs,
    workerFailuresDuring,
    retried,
    aliveAfter: service.alive(),
    serviceErrors: service.lines.filter((l) => l.msg === "request failed").map((l) => `${l.level} ${l.err}`),
    inHandAtFault,
  };
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** What the database holds for the keys named in `text` (a failure message): claim and payment. */
async function describeKeys(db: Database, text: string): Promise<string> {
  const keys = [...new Set(text.match(/(cut|blackhole)-(k-\d+|probe)/g) ?? [])];
  const { rows } = await db.query(
    `SELECT k.key, k.status, k.recovery_point, k.generation, k.locked_at, k.created_at, p.id AS payment_id, p.step, p.status AS payment_status
       FROM idempotency_keys k LEFT JOIN payments p ON p.merchant_id = k.merchant_id AND p.idempotency_key = k.key
      WHERE k.key IN (SELECT jsonb_array_elements_text($1::jsonb))`,
    [JSON.stringify(keys)],
  );
  return JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? String(v) : v));
}

/** Idempotency claims left in progress with no payment behind them: half-done requests. */
async function orphanClaims(db: Database): Promise<string[]> {
  const { rows } = await db.query<{ key: string; recovery_point: string }>(
    `SELECT k.key, k.recovery_point FROM idempotency_keys k
      WHERE k.status = 'in_progress'
        AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.merchant_id = k.merchant_id AND p.idempotency_key = k.key)`,
  );
  return rows.map((r) => `${r.key}@${r.recovery_point}`);
}

async function outboxBacklog(db: Database): Promise<bigint> {
  const { rows } = await db.query<{ n: bigint | null }>(
    "SELECT sum(last_seq - published_seq)::int8 AS n FROM outbox_streams",
  );
  return rows[0]?.n ?? 0n;
}

async function dbOutage(t: TestContext, fault: Fault): Promise<void> {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema } = await openTestDb(t, url);
  const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
  const { apiKey } = await merchants.create({ id: `outage-${fault.name}`, name: `db outage ${fault.name}` });
  const proxy = await startFaultProxy({ upstream: url });
  let acquirer: AcquirerProcess | undefined;
  let service: ServiceProcess | undefined;
  try {
    acquirer = await startAcquirer({ ACQUIRER_SEED: `db-outage-${fault.name}`, ACQUIRER_LATENCY_MS: "50" });
    service = await startServiceProcess(
      {
        DATABASE_URL: proxy.rewrite(url),
        PAYMENTS_DB_SCHEMA: schema,
        PAYMENTS_DB_MAX_CONNECTIONS: "6",
        PAYMENTS_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        PAYMENTS_DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        ACQUIRER_URL: acquirer.url,
        PAYMENTS_BOOTSTRAP_MERCHANT: "off",
        PAYMENTS_INLINE_DRIVE_MS: "1000",
      },
      fault.defaultLeases,
    );
    const run = await runOutage(t, fault, service, proxy, apiKey.key, db).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; stored: ${await describeKeys(db, String(error))}`, { cause: error });
    });
    const liveService = service;
    await quiesce(db, QUIESCE_TIMEOUT_MS);
    const outboxLeft = await waitFor(
      async () => ((await outboxBacklog(db)) === 0n ? 0n : undefined),
      OUTBOX_DRAIN_TIMEOUT_MS,
      100,
    ).catch(async () => outboxBacklog(db));
    const rows = await paymentRows(db);
    const views = await acquirerViews(
      acquirer,
      rows.map((r) => r.acquirer_key),
    );
    const stats = await acquirer.stats();
    const orphans = await orphanClaims(db);
    const invariants = await checkLedgerInvariants(db).catch((error: unknown) => error);
    const byKey = await paymentIdsByKey(db);
    const inHandDoneAtMs = await finishedAt(
      db,
      run.inHandAtFault.map((s) => s.id),
    );
    await checkRun(t, {
      fault,
      run,
      rows,
      views,
      stats,
      orphans,
      invariants,
      byKey,
      outboxLeft,
      inHandDoneAtMs,
    });
    assert.ok(liveService.alive(), "the service process is still alive at the end");
  } finally {
    await service?.stop();
    await acquirer?.stop();
    await proxy.close();
  }
}

/** The public ids (what the API answers) of the payments stored for each key. */
async function paymentIdsByKey(db: Database): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ idempotency_key: string; public_id: string }>(
    "SELECT idempotency_key, public_id FROM payments ORDER BY id",
  );
  const byKey = new Map<string, string[]>();
  for (const r of rows) byKey.set(r.idempotency_key, [...(byKey.get(r.idempotency_key) ?? []), r.public_id]);
  return byKey;
}

interface Evidence {
  fault: Fault;
  run: OutageRun;
  rows: Awaited<ReturnType<typeof paymentRows>>;
  views: Awaited<ReturnType<typeof acquirerViews>>;
  stats: Awaited<ReturnType<AcquirerProcess["stats"]>>;
  orphans: string[];
  invariants: unknown;
  byKey: Map<string, string[]>;
  outboxLeft: bigint;
  /** When each saga of run.inHandAtFault finished, in the same order. */
  inHandDoneAtMs: number[];
}

async function checkRun(t: TestContext, e: Evidence): Promise<void> {
  const { run } = e;
  await t.test(
    "while the database is unreachable: 503 SQL_UNAVAILABLE, /readyz 503, /healthz 200, alive",
    () => {
      if (e.fault.healBeforeTimeouts) {
        // Healed before the service gave up: the probe either went through late or timed out.
        assert.ok(isSuccess(run.probe) || isUnavailable(run.probe), `probe ${JSON.stringify(run.probe)}`);
      } else {
        assert.equal(run.probe.status, 503, `probe POST answered ${JSON.stringify(run.probe)}`);
        assert.equal(run.probe.code, "SQL_UNAVAILABLE");
      }
      assert.equal(run.readyDuring.status, 503, "/readyz is not ready");
      assert.equal(run.healthDuring.status, 200, "/healthz answers: the process is alive");
      assert.ok(run.aliveDuring, "the service process did not exit");
      // Every answer of the run is a success or the documented 503: no 500, no handler timeout, no hang.
      const odd = run.sent.filter((s) => !isSuccess(s.answer) && !isUnavailable(s.answer));
      const errors = run.serviceErrors.filter((l) => !/SQL_UNAVAILABLE/.test(l));
      assert.deepEqual(
        odd.map((s) => `${s.key}: ${JSON.stringify(s.answer)}`),
        [],
        `every request answered 2xx or 503 SQL_UNAVAILABLE; the service logged: ${errors.join(" | ")}`,
      );
      const during = run.sent.filter((s) => isUnavailable(s.answer));
      assert.ok(during.length >= 2, "the clients met the outage");
    },
  );

  await t.test("the workers back off during the outage: no tight retry loop", () => {
    const outageS = (run.healedAtMs - run.faultAtMs) / 1000;
    const perS = run.workerFailuresDuring.length / outageS;
    t.diagnostic(`worker failure lines: ${run.workerFailuresDuring.length} in ${outageS.toFixed(1)} s`);
    assert.ok(perS <= MAX_WORKER_FAILURES_PER_S, `${perS.toFixed(1)} worker failures/s during the outage`);
    assert.ok(run.aliveAfter, "the service process survived the outage");
  });

  await t.test("after the heal: /readyz ready within a bound, payments flow again", () => {
    assert.ok(
      run.readyAfterHealMs <= READY_AFTER_HEAL_MS,
      `ready ${run.readyAfterHealMs} ms after the heal (bound ${READY_AFTER_HEAL_MS})`,
    );
    const after = run.sent.filter((s) => s.sentAtMs > run.healedAtMs + run.readyAfterHealMs);
    assert.ok(
      after.some((s) => isSuccess(s.answer)),
      "a payment sent after the heal succeeded at once",
    );
  });

  await t.test(
    "PY-06 PY-13 each retried 503 gets exactly one payment; one authorization call per key",
    () => {
      const problems: string[] = [];
      for (const s of run.sent) {
        const final = isSuccess(s.answer) ? s.answer : run.retried.get(s.key);
        const ids = e.byKey.get(s.key) ?? [];
        if (ids.length !== 1) problems.push(`${s.key}: ${ids.length} payments`);
        else if (final?.paymentId !== ids[0])
          problems.push(`${s.key}: answered ${final?.paymentId}, stored ${ids[0]}`);
      }
      assert.deepEqual(problems, []);
      assert.equal(e.byKey.size, run.sent.length, "no payment for a key the client never sent");
      assert.equal(e.stats.authorizationAttempts, e.stats.authorizations, "no key was authorized twice");
      assert.ok(run.retried.size > 0, "some requests were retried after a 503");
    },
  );

  await t.test("PY-05 every payment ended terminal, as the acquirer records it; nothing half-done", () => {
    assert.deepEqual(paymentMismatches(e.rows, e.views), []);
    assert.deepEqual(e.orphans, [], "no idempotency claim left in progress without its payment");
    assert.equal(e.outboxLeft, 0n, "every outbox event was published after the heal");
  });

  await t.test("PY-07 the ledger balances: each currency sums to 0, balances = entries", () => {
    assert.equal(e.invariants, undefined, String(e.invariants));
  });

  if (e.fault.defaultLeases)
    await t.test(
      "PY-05 the sagas in hand at the fault finish soon after the heal, well within their 30 s lease",
      () => {
        const sagas = run.inHandAtFault.map((s, i) => ({
          ...s,
          afterHealMs: e.inHandDoneAtMs[i]! - run.healedAtMs,
          leaseLeftAtHealMs: s.leaseExpiresAtMs - run.healedAtMs,
        }));
        const slowest = Math.max(...sagas.map((s) => s.afterHealMs));
        t.diagnostic(
          `${e.fault.name}: ${sagas.length} sagas in hand at the fault finished at most ${slowest} ms after the heal ` +
            `(their leases had ${Math.min(...sagas.map((s) => s.leaseLeftAtHealMs))}–${Math.max(...sagas.map((s) => s.leaseLeftAtHealMs))} ms ` +
            `left at the heal; lease ${DEFAULT_SAGA_LEASE_MS} ms, bound ${IN_HAND_DONE_AFTER_HEAL_MAX_MS} ms)`,
        );
        assert.ok(sagas.length >= 1, "the fault caught sagas in hand");
        for (const s of sagas) {
          assert.ok(
            s.leaseExpiresAtMs - run.faultAtMs > DEFAULT_SAGA_LEASE_MS / 2,
            `saga ${s.id}: a default lease`,
          );
          assert.ok(
            s.afterHealMs <= IN_HAND_DONE_AFTER_HEAL_MAX_MS,
            `saga ${s.id} finished ${s.afterHealMs} ms after the heal (bound ${IN_HAND_DONE_AFTER_HEAL_MAX_MS})`,
          );
          assert.ok(
            s.afterHealMs + run.healedAtMs < s.leaseExpiresAtMs,
            `saga ${s.id} finished before its lease ended`,
          );
        }
      },
    );
}

test("db outage: PostgreSQL link cut (reset, then refused) under load, then healed", (t) => dbOutage(t, CUT));

test("db outage: PostgreSQL link blackholed (accepted, never answered) under load, then healed", (t) =>
  dbOutage(t, BLACKHOLE));

test("db outage: PostgreSQL link stalled shorter than the service's timeouts under load, then healed", (t) =>
  dbOutage(t, STALL));

/**
 * The two ways a request the database failed leaves its idempotency claim behind, each forced on
 * purpose (the load above meets them only when the fault happens to land on them): a retry with
 * the key must start at once after the heal, not answer 409 until the claim's 60 s lease ends.
 */
test("db outage: claims of requests the database failed are given back after the heal", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema } = await openTestDb(t, url);
  const proxy = await startFaultProxy({ upstream: url });
  const viaProxy = await openDatabase({
    system: "payments",
    url: proxy.rewrite(url),
    schema,
    pool: { maxConnections: 2, statementTimeoutMs: 300, connectTimeoutMs: 500 },
  });
  const log = createLogger({ service: "db-outage-test", version: "0", level: "silent" });
  const store = paymentsIdempotencyStore(viaProxy, { clock: systemClock });
  const direct = paymentsIdempotencyStore(db, { clock: systemClock });
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/payments", body: { n: 1 } });
  const retryStarts = async (key: string) => {
    const begun = await direct.begin({ scope: "m1", key, fingerprint }).catch((e: unknown) => e);
    return (begun as { kind?: string }).kind === "started" ? true : undefined;
  };
  try {
    await t.test(
      "begin's INSERT held by a silent link and run after the heal: the claim is abandoned",
      async () => {
        await viaProxy.query("SELECT 1"); // an open connection, so the INSERT is sent and held, not refused
        proxy.blackhole(true, "hold");
        const claim = { scope: "m1", key: "held-insert", fingerprint, nowMs: Date.now() };
        const begun = await beginClaim(store, viaProxy, claim, log).catch((e: unknown) => e);
        assert.ok(sqlErrors.is(begun, "SQL_UNAVAILABLE"), `begin failed with ${String(begun)}`);
        await proxy.heal(); // the held INSERT reaches PostgreSQL now, after its request answered 503
        await waitFor(() => retryStarts("held-insert"), CLAIM_CLEANUP_TIMEOUT_MS, 100);
      },
    );
    await t.test("release refused while the link is cut: it lands after the heal", async () => {
      const begun = await direct.begin({ scope: "m1", key: "cut-release", fingerprint });
      assert.equal(begun.kind, "started");
      await viaProxy.query("SELECT 1");
      await proxy.refuse(true);
      proxy.cutAll();
      if (begun.kind === "started") await releaseAfterFailure(store, viaProxy, begun.lease, log);
      const held = await direct
        .begin({ scope: "m1", key: "cut-release", fingerprint })
        .catch((e: unknown) => e);
      assert.ok(idempotencyErrors.is(held, "PAYMENTS_IDEMPOTENCY_IN_PROGRESS"), "the claim is still held");
      await proxy.heal();
      await waitFor(() => retryStarts("cut-release"), CLAIM_CLEANUP_TIMEOUT_MS, 100);
    });
    // Each clean-up ends once it landed (or found nothing three times): none keeps running.
    await waitFor(
      async () => (pendingClaimCleanups() === 0 ? true : undefined),
      CLAIM_CLEANUP_TIMEOUT_MS,
      100,
    );
  } finally {
    await viaProxy.close();
    await proxy.close();
  }
});

/**
 * The outbox relay loses the database in the middle of a key's batch (its publish went out, its
 * mark did not): the key stays leased to the relay for its lease (30 s). The relay knows no task
 * of its own publishes that key, so after the heal it takes the key back at once and the events
 * flow again, in order, well inside the lease.
 */
test("db outage: the outbox relay takes its own orphaned key back after the heal, not after its lease", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema } = await openTestDb(t, url);
  for (let i = 1; i <= 3; i++)
    await db.transaction((tx) =>
      enqueue(tx, { orderingKey: "acct:1", type: "payment.captured", payload: { i } }),
    );
  const proxy = await startFaultProxy({ upstream: url });
  const viaProxy = await openDatabase({
    system: "payments",
    url: proxy.rewrite(url),
    schema,
    pool: { maxConnections: 2, statementTimeoutMs: 300, connectTimeoutMs: 500 },
  });
  const published: bigint[] = [];
  let firstPublish!: () => void;
  const publishing = new Promise<void>((resolve) => {
    firstPublish = resolve;
  });
  let letFirstFinish!: () => void;
  const firstMayFinish = new Promise<void>((resolve) => {
    letFirstFinish = resolve;
  });
  const keyFailures: string[] = [];
  const relay = new OutboxRelay(viaProxy, {
    publisher: {
      async publish(event) {
        if (published.length === 0) {
          firstPublish();
          await firstMayFinish;
        }
        published.push(event.seq);
      },
    },
    random: seededRandom("db-outage-relay"),
    pollIntervalMs: 50,
    onError: (_err, key) => {
      if (key !== undefined) keyFailures.push(key);
    },
  });
  try {
    relay.start();
    await publishing;
    await proxy.refuse(true);
    proxy.cutAll();
    letFirstFinish(); // the publishes succeed; marking them published meets the cut
    await waitFor(async () => (keyFailures.length > 0 ? true : undefined), 5_000, 10);
    await proxy.heal();
    const startMs = Date.now();
    await waitFor(
      async () => ((await outboxBacklog(db)) === 0n ? true : undefined),
      OUTBOX_RECLAIM_TIMEOUT_MS,
      50,
    );
    t.diagnostic(`published ${published.join(",")} ${Date.now() - startMs} ms after the heal`);
    // At least once: the run whose one mark was lost (the key's three events: a mark per run of
    // up to RELAY_MARK_EVERY) is published again, in order.
    assert.deepEqual(published, [1n, 2n, 3n, 1n, 2n, 3n]);
  } finally {
    await relay.stop();
    await viaProxy.close();
    await proxy.close();
  }
});
