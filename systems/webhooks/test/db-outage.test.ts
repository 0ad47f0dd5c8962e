/**
 * Fault test: the database goes away under the running service. The whole service
 * (`src/main.ts` as a child process: API, outbox relays, delivery worker, sweeper) runs on
 * real PostgreSQL through a TCP fault proxy (packages/lab), in a database of its own; a
 * local receiver verifies and counts webhook-ids; events are posted at a steady rate, each
 * with an Idempotency-Key, as a careful producer does. Then the link fails three ways:
 *
 * - "cut": the link slows down (so transactions are open), then every open link is reset
 *   and new connections are refused (the server is gone);
 * - "blackhole hold": links accepted, nothing answered; held bytes arrive at heal (a short
 *   partition, TCP retransmitting);
 * - "blackhole discard": links accepted, nothing answered, bytes lost (a dead link): only
 *   the pool's connect and query timeouts end the waits.
 *
 * During the fault: POST /v1/events answers 503 SQL_UNAVAILABLE (and only 2xx or that),
 * /readyz is not ready, /healthz answers, the process neither crashes nor spins (its failed
 * claim and relay rounds are bounded by their backoff; CPU and heap stay bounded). After
 * heal: /readyz is ready within a bound; every event answered 2xx is delivered (at least
 * once; duplicates carry the same webhook-id and are counted), each delivery within a third
 * of the worker's lease after heal (stranded claims are given back, not waited out); an
 * event refused with 503 never appears later unless the 503 said the commit was in doubt;
 * retrying each 503 with its key yields exactly one event; nothing is half-written (every
 * event has its delivery).
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database, Queryable, QueryResult, TransactionOptions } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { eventually } from "@casebook/lab/eventually";
import { type FaultProxy, startFaultProxy } from "@casebook/lab/fault-proxy";
import { type ChildProcessWithPipes, type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { newTestSecret } from "../bench/backlog.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../bench/webhook-receiver.ts";
import { MAX_CLAIM_ERROR_BACKOFF_MS } from "../src/workers/delivery-worker.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { MAX_ROUND_ERROR_BACKOFF_MS, OutboxRelay } from "../src/workers/outbox-relay.ts";
import { openPgliteTestDatabase } from "./store-backends.ts";
import { ingest, newWorld, seedSubscription, seedTenant } from "./store-fixture.ts";

const MAIN = new URL("../src/main.ts", import.meta.url).pathname;
const TENANT = "outage";
const POLL_INTERVAL_MS = 50;
const RELAYS = 4;
/** Pool bounds given to the service: a dead link must fail a request well inside these. */
const DB_CONNECT_TIMEOUT_MS = 1_000;
const DB_STATEMENT_TIMEOUT_MS = 2_000;
/** pg's client-side read timeout: the statement timeout + infra's 5 s grace (pg-database.ts). */
const DB_QUERY_TIMEOUT_MS = DB_STATEMENT_TIMEOUT_MS + 5_000;
/** Steady producer: events per second, and a bound on its requests awaiting an answer. */
const INGEST_RATE_PER_S = 20;
const MAX_INGEST_IN_FLIGHT = 400;
/** Every POST must be answered: a transaction on a dead link costs at most two read timeouts. */
const POST_ANSWER_BOUND_MS = 2 * DB_QUERY_TIMEOUT_MS + DB_CONNECT_TIMEOUT_MS + 10_000;
/** Phases: flow before the fault, the fault itself (after the first 503), flow after heal. */
const FLOW_BEFORE_DELIVERIES = 10;
const FAULT_HOLD_MS = 4_000;
/** Before the cut, the link slows down for a while, so transactions are open when it dies. */
const CUT_LATENCY_MS = 100;
const CUT_SLOW_MS = 1_000;
const FLOW_AFTER_MS = 1_500;
/** Bounds on waiting (a loaded 2-core machine is slow; these are limits, not expectations). */
const START_BOUND_MS = 60_000;
const FIRST_503_BOUND_MS = 10_000;
/** Pool slots held by requests on a dead link free up within two read timeouts. */
const READY_AFTER_HEAL_BOUND_MS = 2 * DB_QUERY_TIMEOUT_MS + DB_CONNECT_TIMEOUT_MS + 5_000;
const DELIVERY_BOUND_MS = 45_000;
/**
 * The worker's lease, a production-sized one: the worker gives back the claims a failure
 * stranded when the database answers again, not when their lease ends, so a long lease
 * costs the recovery nothing (a delivery that waited it out would fail the bound below).
 */
const LEASE_MS = 60_000;
/**
 * After heal every delivery succeeds within a third of the lease. Its worst honest wait: a
 * statement sent on a dead link just before heal (DB_QUERY_TIMEOUT_MS), a pool slot
 * (DB_CONNECT_TIMEOUT_MS), the worker's longest pause after a failed round
 * (MAX_CLAIM_ERROR_BACKOFF_MS), then the send (its 2 s deadline): 15 s.
 */
const DELIVERED_AFTER_HEAL_BOUND_MS = LEASE_MS / 3;
const EXIT_BOUND_MS = 30_000;
/** No spin: the service's CPU over the fault, in cores; a busy loop is ~1. */
const MAX_FAULT_CPU_CORES = 0.9;
const MAX_FAULT_HEAP_GROWTH_BYTES = 64 * 1024 * 1024;
const MAX_LOG_LINES = 200_000;

type FaultKind = "cut" | "blackhole hold" | "blackhole discard";

interface LogLine {
  atMs: number;
  level: string;
  msg: string;
}

interface Sent {
  key: string;
  body: { type: string; payload: Record<string, unknown> };
  sentAtMs: number;
  status?: number;
  code?: string;
  id?: string;
  /** The 503's body said the commit may have happened (retry with the same key). */
  inDoubt?: boolean;
  error?: string;
}

// ---------------------------------------------------------------------------------------
// The service as a child process, and what it logs.

class ServiceProcess {
  readonly lines: LogLine[] = [];
  #partial = "";
  #text = "";
  readonly #spawned: SpawnedChild;

  private constructor(spawned: SpawnedChild) {
    this.#spawned = spawned;
    // Both streams are the log, read raw: lab keeps no line queue and echoes nothing.
    spawned.process.stdout.on("data", (chunk: Buffer) => this.#take(chunk));
    spawned.process.stderr.on("data", (chunk: Buffer) => this.#take(chunk));
  }

  static async start(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
    const spawned = await spawnChild(MAIN, { env, ready: false, queueLines: false, echoStderr: false });
    spawned.process.stdin.end(); // no input, as stdin "ignore" gave
    return new ServiceProcess(spawned);
  }

  get child(): ChildProcessWithPipes {
    return this.#spawned.process;
  }

  /** A string field of the first log line with message `msg`, waiting for it up to `timeoutMs`. */
  async find(msg: string, field: string, timeoutMs: number): Promise<string> {
    const line = () => this.#text.split("\n").find((l) => l.includes(`"msg":"${msg}"`));
    await until(() => line() !== undefined || this.child.exitCode !== null, timeoutMs, msg);
    const found = new RegExp(`"${field}":"([^"]+)"`).exec(line() ?? "")?.[1];
    if (found === undefined) assert.fail(`no ${field} in "${msg}": ${this.#text.slice(-3_000)}`);
    return found;
  }

  count(msg: string, fromMs: number, toMs: number): number {
    return this.lines.filter((l) => l.msg === msg && l.atMs >= fromMs && l.atMs <= toMs).length;
  }

  tail(): string {
    return this.#text.slice(-4_000);
  }

  #take(chunk: Buffer): void {
    const text = this.#partial + chunk.toString("utf8");
    const parts = text.split("\n");
    this.#partial = parts.pop() ?? "";
    for (const raw of parts) {
      if (this.lines.length >= MAX_LOG_LINES) return;
      // Only the start lines (url, key) are searched as text; later output is kept as lines.
      if (this.#text.length < 100_000) this.#text += `${raw}\n`;
      else this.#text = `${this.#text.slice(-50_000)}${raw}\n`;
      this.lines.push(parseLine(raw));
    }
  }
}

function parseLine(raw: string): LogLine {
  const atMs = performance.now();
  try {
    const parsed = JSON.parse(raw) as { level?: unknown; msg?: unknown };
    return { atMs, level: String(parsed.level ?? "?"), msg: String(parsed.msg ?? "") };
  } catch {
    return { atMs, level: "raw", msg: raw };
  }
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  await eventually(check, { what, timeoutMs });
}

// ---------------------------------------------------------------------------------------
// The producer: a steady rate of POST /v1/events, every one with an Idempotency-Key.

async function postEvent(base: string, apiKey: string, sent: Sent): Promise<void> {
  try {
    const res = await fetch(`${base}/v1/events`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": "application/json",
        "idempotency-key": sent.key,
      },
      body: JSON.stringify(sent.body),
      signal: AbortSignal.timeout(POST_ANSWER_BOUND_MS),
    });
    const body = (await res.json()) as { id?: string; code?: string; eventOutcome?: string };
    sent.status = res.status;
    if (res.status < 300) sent.id = body.id;
    else sent.code = body.code;
    sent.inDoubt = body.eventOutcome === "unknown";
  } catch (error) {
    const cause = (error as Error).cause as { code?: string; message?: string } | undefined;
    sent.error = `${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ""}`;
  }
}

class Producer {
  readonly sent: Sent[] = [];
  skipped = 0;
  readonly #inflight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #n = 0;

  readonly base: string;
  readonly apiKey: string;
  readonly prefix: string;

  constructor(base: string, apiKey: string, prefix: string) {
    this.base = base;
    this.apiKey = apiKey;
    this.prefix = prefix;
  }

  start(): void {
    this.#timer = setInterval(() => this.#tick(), 1_000 / INGEST_RATE_PER_S);
  }

  /** Stops sending; answers still awaited go on. */
  halt(): void {
    clearInterval(this.#timer);
  }

  /** Stops sending and waits for every answer (each bounded by POST_ANSWER_BOUND_MS). */
  async stop(): Promise<void> {
    this.halt();
    while (this.#inflight.size > 0) await Promise.all(this.#inflight);
  }

  #tick(): void {
    if (this.#inflight.size >= MAX_INGEST_IN_FLIGHT) {
      this.skipped += 1;
      return;
    }
    this.#n += 1;
    const sent: Sent = {
      key: `${this.prefix}-${this.#n}`,
      body: { type: "order.placed", payload: { n: this.#n } },
      sentAtMs: performance.now(),
    };
    this.sent.push(sent);
    const running: Promise<void> = postEvent(this.base, this.apiKey, sent).finally(() =>
      this.#inflight.delete(running),
    );
    this.#inflight.add(running);
  }
}

// ---------------------------------------------------------------------------------------
// The world: a database of its own, the proxy, the receiver, the service.

interface World {
  proxy: FaultProxy;
  receiver: WebhookReceiver;
  service: ServiceProcess;
  url: string;
  apiKey: string;
  /** A direct link to the service's database (not through the proxy), for the checks. */
  direct: Database;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

function serviceEnv(databaseUrl: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "",
    PORT: "0",
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "info",
    WEBHOOKS_BOOTSTRAP_TENANT: TENANT,
    WEBHOOKS_ALLOW_HTTP: "true",
    WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32",
    WEBHOOKS_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS),
    WEBHOOKS_RELAYS: String(RELAYS),
    WEBHOOKS_HTTP_DEADLINE_MS: "2000",
    WEBHOOKS_LEASE_MS: String(LEASE_MS),
    WEBHOOKS_DB_CONNECT_TIMEOUT_MS: String(DB_CONNECT_TIMEOUT_MS),
    WEBHOOKS_DB_STATEMENT_TIMEOUT_MS: String(DB_STATEMENT_TIMEOUT_MS),
  };
}

async function startWorld(t: TestContext, testUrl: string): Promise<World> {
  const database = uniqueName("wh_outage");
  const admin = await openDatabase({
    system: "webhooks",
    url: testUrl,
    schema: "public",
    pool: { maxConnections: 1 },
  });
  await admin.exec(`CREATE DATABASE ${quoteIdentifier(database)}`);
  t.after(async () => {
    try {
      await admin.exec(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)} WITH (FORCE)`);
    } finally {
      await admin.close();
    }
  });
  const databaseUrl = withDatabase(testUrl, database);
  const proxy = await startFaultProxy({ upstream: databaseUrl, connectTimeoutMs: 2_000 });
  t.after(() => proxy.close());
  const secret = newTestSecret();
  const receiver = await startWebhookReceiver({ secrets: [secret] });
  t.after(() => receiver.close());
  const service = await ServiceProcess.start(serviceEnv(proxy.rewrite(databaseUrl)));
  t.after(async () => {
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL");
  });
  const url = await service.find("webhooks listening", "url", START_BOUND_MS);
  const apiKey = await service.find(
    "bootstrap tenant created: its API key is shown only now",
    "apiKey",
    START_BOUND_MS,
  );
  const direct = await openDatabase({ system: "webhooks", url: databaseUrl, pool: { maxConnections: 2 } });
  t.after(() => direct.close());
  const res = await fetch(`${url}/v1/subscriptions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: receiver.url("/hooks"), secret, eventTypes: ["order.*"] }),
  });
  assert.equal(res.status, 201, await res.text());
  return { proxy, receiver, service, url, apiKey, direct };
}

// ---------------------------------------------------------------------------------------
// Faults and observations.

async function applyFault(proxy: FaultProxy, kind: FaultKind): Promise<void> {
  if (kind === "cut") {
    // Slow first, so the cut surely lands on transactions in flight (each round trip takes
    // 2 × CUT_LATENCY_MS): what a cut must survive is a link dying under open work.
    proxy.setLatency(CUT_LATENCY_MS);
    await new Promise((resolve) => setTimeout(resolve, CUT_SLOW_MS));
    await proxy.refuse(true);
    proxy.cutAll();
  } else {
    proxy.blackhole(true, kind === "blackhole hold" ? "hold" : "discard");
  }
}

interface ProcessSample {
  atMs: number;
  cpuS: number;
  heapBytes: number;
}

async function sample(url: string): Promise<ProcessSample> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "m").exec(text);
    assert.ok(match, `${name} in /metrics`);
    return Number(match[1]);
  };
  return {
    atMs: performance.now(),
    cpuS: value("process_cpu_seconds_total"),
    heapBytes: value("nodejs_heap_size_used_bytes"),
  };
}

/**
 * Most failed rounds a loop can log in `windowMs` when each failure doubles its pause from
 * `pollMs` up to `capMs` (failures that take time themselves only lower the count).
 */
function backoffRoundsMax(windowMs: number, pollMs: number, capMs: number): number {
  let atMs = 0;
  let rounds = 0;
  while (atMs <= windowMs) {
    rounds += 1;
    atMs += Math.min(capMs, pollMs * 2 ** Math.min(rounds, 16));
  }
  return rounds + 1; // the round already running when the window opened
}

async function readiness(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** When /readyz answered 200 again after heal; fails past READY_AFTER_HEAL_BOUND_MS. */
async function readyAgain(url: string, healedAtMs: number): Promise<number> {
  const deadline = healedAtMs + READY_AFTER_HEAL_BOUND_MS;
  for (;;) {
    if ((await readiness(url)).status === 200) return performance.now();
    if (performance.now() > deadline)
      assert.fail(`/readyz not ready ${READY_AFTER_HEAL_BOUND_MS} ms after heal`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** During the fault: the API refuses with 503 SQL_UNAVAILABLE, readiness fails, liveness answers. */
async function checkDuringFault(world: World, producer: Producer, faultAtMs: number): Promise<void> {
  await until(
    () => producer.sent.some((s) => s.sentAtMs >= faultAtMs && s.status === 503),
    FIRST_503_BOUND_MS,
    "a POST during the fault answered 503",
  ).catch((error: unknown) => {
    const tally: Record<string, number> = {};
    for (const s of producer.sent.filter((sent) => sent.sentAtMs >= faultAtMs)) {
      const outcome = `${s.status ?? "no answer"} ${s.code ?? s.error ?? ""}`;
      tally[outcome] = (tally[outcome] ?? 0) + 1;
    }
    throw new Error(`${(error as Error).message}; answers since the fault: ${JSON.stringify(tally)}`);
  });
  const refused = producer.sent.find((s) => s.sentAtMs >= faultAtMs && s.status === 503)!;
  assert.equal(refused.code, "SQL_UNAVAILABLE", "the 503 is the database's problem, named");
  const ready = await readiness(world.url);
  assert.equal(ready.status, 503, `/readyz during the fault: ${JSON.stringify(ready.body)}`);
  assert.equal(ready.body.status, "unavailable");
  assert.equal((ready.body.checks as Record<string, { status: string }>).database?.status, "failed");
  const live = await fetch(`${world.url}/healthz`);
  assert.equal(live.status, 200, "/healthz answers while the database is away");
  assert.deepEqual(await live.json(), { status: "ok" });
}

/** The service's CPU, heap and failed-round log lines over the fault: bounded, no spin. */
function checkNoSpin(
  t: TestContext,
  world: World,
  window: { from: ProcessSample; to: ProcessSample; kind: FaultKind },
): void {
  const { from, to } = window;
  const windowMs = to.atMs - from.atMs;
  const claimFailures = world.service.count(
    "delivery worker: claim round failed; retrying after a pause",
    from.atMs,
    to.atMs,
  );
  const relayFailures = world.service.count("outbox relay: publish failed; retrying", from.atMs, to.atMs);
  const claimsMax = backoffRoundsMax(windowMs, POLL_INTERVAL_MS, MAX_CLAIM_ERROR_BACKOFF_MS);
  const relayRoundsMax = backoffRoundsMax(windowMs, POLL_INTERVAL_MS, MAX_ROUND_ERROR_BACKOFF_MS);
  const cpuCores = (to.cpuS - from.cpuS) / (windowMs / 1_000);
  const heapGrowth = to.heapBytes - from.heapBytes;
  t.diagnostic(
    `fault ${Math.round(windowMs)} ms: claim failures ${claimFailures}, relay failures ${relayFailures} ` +
      `(bounds ${claimsMax}, ${RELAYS} × ${relayRoundsMax + 1}), cpu ${cpuCores.toFixed(2)} cores, heap ${Math.round(heapGrowth / 1024)} KiB`,
  );
  assert.ok(claimFailures <= claimsMax, `the worker backs off: ${claimFailures} failed claims`);
  // Refused connections fail every claim at once: the backoff, not a slow failure, bounds them.
  if (window.kind === "cut") assert.ok(claimFailures >= 2, `the worker kept trying: ${claimFailures}`);
  // A relay's first failed round may log twice (its publish, then recording the failure).
  assert.ok(
    relayFailures <= RELAYS * (relayRoundsMax + 1),
    `the relays back off: ${relayFailures} failed rounds`,
  );
  assert.ok(cpuCores < MAX_FAULT_CPU_CORES, `no busy loop: ${cpuCores.toFixed(2)} cores`);
  assert.ok(heapGrowth < MAX_FAULT_HEAP_GROWTH_BYTES, `heap bounded: grew ${heapGrowth} bytes`);
}

/** Every POST got 2xx or 503 SQL_UNAVAILABLE; nothing else, nothing unanswered. */
function checkAnswers(producer: Producer): void {
  for (const s of producer.sent) {
    assert.equal(s.error, undefined, `${s.key} got no answer: ${s.error}`);
    if (s.status === 202) continue;
    assert.equal(s.status, 503, `${s.key} answered ${s.status} ${s.code}`);
    assert.equal(s.code, "SQL_UNAVAILABLE", `${s.key}: 503 ${s.code}`);
  }
  assert.equal(producer.skipped, 0, "the producer never hit its in-flight bound");
}

async function eventIdsByKey(db: Database, keys: readonly string[]): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ idempotency_key: string; id: string }>(
    "SELECT idempotency_key, id FROM events WHERE tenant_id = $1 AND idempotency_key = ANY($2::text[])",
    [TENANT, keys],
  );
  const byKey = new Map<string, string[]>();
  for (const row of rows) byKey.set(row.idempotency_key, [...(byKey.get(row.idempotency_key) ?? []), row.id]);
  return byKey;
}

/**
 * A 503 is "not accepted": its event never shows up, unless the 503 said the commit was in
 * doubt. A retry with the same key after heal is accepted, as exactly one event (the same
 * one when the first commit did land).
 */
async function retryRefused(t: TestContext, world: World, producer: Producer): Promise<Map<string, string>> {
  const refused = producer.sent.filter((s) => s.status === 503);
  const before = await eventIdsByKey(
    world.direct,
    refused.map((s) => s.key),
  );
  const appeared = refused.filter((s) => before.has(s.key));
  t.diagnostic(
    `503s: ${refused.length}, of which in doubt ${refused.filter((s) => s.inDoubt).length}, stored ${appeared.length}`,
  );
  for (const s of appeared)
    assert.ok(s.inDoubt, `${s.key} was refused with a plain 503 yet its event was stored`);
  const retried = new Map<string, string>();
  for (const s of refused) {
    const again: Sent = { key: s.key, body: s.body, sentAtMs: performance.now() };
    await postEvent(world.url, world.apiKey, again);
    assert.equal(again.status, 202, `retry of ${s.key}: ${again.status} ${again.code} ${again.error ?? ""}`);
    const first = before.get(s.key)?.[0];
    if (first !== undefined) assert.equal(again.id, first, `retry of ${s.key} returns the stored event`);
    retried.set(s.key, again.id!);
  }
  const after = await eventIdsByKey(
    world.direct,
    producer.sent.map((s) => s.key),
  );
  for (const s of producer.sent) {
    assert.equal(after.get(s.key)?.length, 1, `exactly one event for ${s.key}`);
  }
  return retried;
}

/** Every accepted event delivered (duplicates counted, same webhook-id), nothing half-written. */
async function checkDelivered(t: TestContext, world: World, expected: ReadonlySet<string>): Promise<void> {
  const { receiver, direct } = world;
  const countOf = (id: string) => receiver.countsByKey.get(`/hooks ${id}`) ?? 0;
  await receiver.waitFor(() => [...expected].every((id) => countOf(id) > 0), DELIVERY_BOUND_MS);
  const received = new Set(receiver.received.map((r) => r.id));
  for (const id of received) assert.ok(expected.has(id), `webhook-id ${id} belongs to an accepted event`);
  assert.equal(receiver.unverified, 0, "every webhook verifies");
  const duplicates = [...expected].filter((id) => countOf(id) > 1).length;
  t.diagnostic(
    `${expected.size} events delivered, ${receiver.requests} requests, ${duplicates} webhook-ids twice or more`,
  );
  const deadline = performance.now() + DELIVERY_BOUND_MS;
  for (;;) {
    const { rows } = await direct.query<{ events: bigint; succeeded: bigint; unpublished: bigint }>(
      `SELECT (SELECT count(*) FROM events) AS events,
              (SELECT count(*) FROM deliveries WHERE state = 'succeeded') AS succeeded,
              (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS unpublished`,
    );
    const row = rows[0]!;
    if (row.events === row.succeeded && row.unpublished === 0n) {
      assert.equal(Number(row.events), expected.size, "one event per accepted key, no other");
      return;
    }
    if (performance.now() > deadline)
      assert.fail(
        `deliveries not all succeeded: ${JSON.stringify(row, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * No delivery waits out a lease after heal: each succeeded within DELIVERED_AFTER_HEAL_BOUND_MS
 * of heal, or of its fan-out when that came later (the worker cannot send what the relays
 * have not fanned out yet; the relays give back their own stranded claims, outbox-relay.ts).
 * The service's clock and this process's are the same machine's wall clock.
 */
async function checkDeliveredSoonAfterHeal(
  t: TestContext,
  world: World,
  healedAtWallMs: number,
): Promise<void> {
  const { rows } = await world.direct.query<{
    lag_ms: number;
    pending_at_heal: boolean;
    event_lag_ms: number;
  }>(
    `SELECT extract(epoch FROM finished_at - greatest($1::timestamptz, created_at)) * 1000 AS lag_ms,
            created_at < $1::timestamptz AND finished_at > $1::timestamptz AS pending_at_heal,
            extract(epoch FROM finished_at - greatest($1::timestamptz, (SELECT created_at FROM events e WHERE e.id = d.event_id))) * 1000 AS event_lag_ms
       FROM deliveries d WHERE state = 'succeeded'`,
    [new Date(healedAtWallMs)],
  );
  const worst = (of: readonly number[]) => Math.round(Math.max(0, ...of));
  const lags = rows.map((r) => Number(r.lag_ms));
  const atHeal = rows.filter((r) => r.pending_at_heal).map((r) => Number(r.lag_ms));
  const eventLags = rows.map((r) => Number(r.event_lag_ms));
  t.diagnostic(
    `after heal: ${atHeal.length} deliveries waiting at heal, all succeeded within ${worst(atHeal)} ms of it; ` +
      `every delivery within ${worst(lags)} ms of heal or its fan-out, every event within ${worst(eventLags)} ms ` +
      `of heal or its commit (lease ${LEASE_MS} ms, bound ${DELIVERED_AFTER_HEAL_BOUND_MS} ms)`,
  );
  assert.ok(
    worst(lags) < DELIVERED_AFTER_HEAL_BOUND_MS,
    `a delivery succeeded ${worst(lags)} ms after heal: stranded claims waited out their lease`,
  );
}

async function stopService(service: ServiceProcess): Promise<void> {
  assert.equal(service.child.exitCode, null, `the service is still running: ${service.tail()}`);
  const exited = new Promise<number | null>((resolve) => service.child.once("exit", (code) => resolve(code)));
  service.child.kill("SIGTERM");
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error("no exit after SIGTERM")), EXIT_BOUND_MS).unref(),
  );
  assert.equal(await Promise.race([exited, timeout]), 0, `clean exit: ${service.tail()}`);
  const bad = service.lines.filter((l) => l.level === "error" || l.level === "fatal" || l.level === "raw");
  assert.deepEqual(bad, [], "no error, crash or stray output");
}

// ---------------------------------------------------------------------------------------

async function outageScenario(t: TestContext, kind: FaultKind): Promise<void> {
  const testUrl = await requirePostgres(t);
  if (!testUrl) return;
  const world = await startWorld(t, testUrl);
  try {
    await runOutage(t, world, kind);
  } catch (error) {
    // A crashed service shows up as refused connections: say so, with its last words.
    const { exitCode, signalCode } = world.service.child;
    if (exitCode === null && signalCode === null) throw error;
    const why = `the service process died (exit ${exitCode}, signal ${signalCode}): ${world.service.tail()}`;
    throw new Error(`${(error as Error).message}\n${why}`, { cause: error });
  }
}

async function runOutage(t: TestContext, world: World, kind: FaultKind): Promise<void> {
  const producer = new Producer(world.url, world.apiKey, kind.replaceAll(" ", "-"));
  producer.start();
  t.after(() => producer.halt());
  await world.receiver.waitFor(() => world.receiver.requests >= FLOW_BEFORE_DELIVERIES, START_BOUND_MS);
  const before = await sample(world.url);
  await applyFault(world.proxy, kind);
  await checkDuringFault(world, producer, before.atMs);
  await new Promise((resolve) => setTimeout(resolve, FAULT_HOLD_MS));
  const during = await sample(world.url);
  checkNoSpin(t, world, { from: before, to: during, kind });
  await world.proxy.heal();
  const healedAtMs = performance.now();
  const healedAtWallMs = Date.now();
  const readyAtMs = await readyAgain(world.url, healedAtMs);
  t.diagnostic(`/readyz ready ${Math.round(readyAtMs - healedAtMs)} ms after heal`);
  await until(
    () => producer.sent.some((s) => s.sentAtMs > readyAtMs && s.status === 202),
    READY_AFTER_HEAL_BOUND_MS,
    "an event accepted after heal",
  );
  await new Promise((resolve) => setTimeout(resolve, FLOW_AFTER_MS));
  await producer.stop();
  checkAnswers(producer);
  const accepted = producer.sent.filter((s) => s.status === 202);
  assert.ok(
    accepted.some((s) => s.sentAtMs < before.atMs),
    "events accepted before the fault",
  );
  assert.ok(
    accepted.some((s) => s.sentAtMs > healedAtMs),
    "events accepted after heal",
  );
  const retried = await retryRefused(t, world, producer);
  const expected = new Set([...accepted.map((s) => s.id!), ...retried.values()]);
  await checkDelivered(t, world, expected);
  await checkDeliveredSoonAfterHeal(t, world, healedAtWallMs);
  await stopService(world.service);
}

// The three outages are independent worlds (each its own schema, fault proxy, service process
// and receiver) that mostly wait (fault hold, backoffs, heal): side by side, not one after another.
// Their no-spin bounds are ceilings (failed rounds, CPU) that contention only lowers; the one a slow
// machine can raise, deliveries after heal, allows 20 s (a third of the lease: what it tells apart).
describe("database outages", { concurrency: 3 }, () => {
  test("database cut (links reset, connections refused): 503 SQL_UNAVAILABLE, not ready, no spin; after heal ready, nothing lost", async (t) => {
    await outageScenario(t, "cut");
  });

  test("database blackholed, bytes held (short partition): 503 SQL_UNAVAILABLE, not ready, no spin; after heal ready, nothing lost", async (t) => {
    await outageScenario(t, "blackhole hold");
  });

  test("database blackholed, bytes lost (dead link): pool timeouts bound every wait; after heal ready, nothing lost", async (t) => {
    await outageScenario(t, "blackhole discard");
  });
});

// ---------------------------------------------------------------------------------------
// The two edges the outage above reaches only by chance, made deterministic on PGlite: a
// link that drops at a chosen statement, as pg-database surfaces it (SQL_UNAVAILABLE).

/** A Database whose link can drop: before a statement matching `dropAt`, or on the next COMMIT. */
class DroppingLink implements Database {
  readonly inner: Database;
  /** Every statement fails while true. */
  down = false;
  /** The link drops (`down` turns true) just before a statement matching this. */
  dropAt: RegExp | undefined;
  /** The next COMMIT's answer is lost: the work is rolled back, the caller sees SQL_UNAVAILABLE. */
  loseNextCommit = false;

  constructor(inner: Database) {
    this.inner = inner;
  }

  get engine() {
    return this.inner.engine;
  }

  get schema() {
    return this.inner.schema;
  }

  #check(text: string): void {
    if (this.dropAt?.test(text)) this.down = true;
    if (this.down) throw sqlErrors.create("SQL_UNAVAILABLE", { detail: "the test dropped the link" });
  }

  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    this.#check(text);
    return this.inner.query<Row>(text, params);
  }

  async exec(script: string): Promise<void> {
    this.#check(script);
    await this.inner.exec(script);
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
    this.#check("BEGIN");
    return this.inner.transaction(async (tx) => {
      const linked: Queryable = {
        query: <Row = Record<string, unknown>>(text: string, params?: readonly unknown[]) => {
          this.#check(text);
          return tx.query<Row>(text, params);
        },
        exec: (script) => {
          this.#check(script);
          return tx.exec(script);
        },
      };
      const result = await fn(linked);
      if (this.loseNextCommit) {
        this.loseNextCommit = false;
        // What the SQL layer reports for a link lost with the COMMIT on its way.
        throw sqlErrors.create("SQL_UNAVAILABLE", {
          detail: "the test lost the COMMIT's answer",
          fields: { commitOutcome: "unknown" },
        });
      }
      return result;
    }, options);
  }

  ping(timeoutMs?: number): Promise<void> {
    this.#check("SELECT 1");
    return this.inner.ping(timeoutMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

test("an ingest whose link drops before COMMIT is a plain 503 and stores nothing; one whose COMMIT answer is lost says the outcome is unknown", async (t) => {
  if (engineFree(t)) return;
  const db = await openPgliteTestDatabase();
  t.after(() => db.close());
  const link = new DroppingLink(db);
  const w = newWorld(link);
  const tenant = await seedTenant(w);
  const stored = async (key: string) =>
    (await db.query("SELECT 1 FROM events WHERE idempotency_key = $1", [key])).rowCount;

  link.dropAt = /INSERT INTO events/;
  const early = await ingest(w, tenant.id, { idempotencyKey: "k-early" }).catch((error: unknown) => error);
  assert.ok(sqlErrors.is(early, "SQL_UNAVAILABLE"), `a plain 503: ${String(early)}`);
  assert.equal(early.fields.eventOutcome, undefined, "before COMMIT the outcome is known: not stored");
  assert.equal(await stored("k-early"), 0, "nothing half-written");

  link.dropAt = undefined;
  link.down = false;
  link.loseNextCommit = true;
  const lost = await ingest(w, tenant.id, { idempotencyKey: "k-commit" }).catch((error: unknown) => error);
  assert.ok(sqlErrors.is(lost, "SQL_UNAVAILABLE"), `still 503 SQL_UNAVAILABLE: ${String(lost)}`);
  assert.equal(lost.fields.eventOutcome, "unknown", "a lost COMMIT answer is in doubt, and says so");
  assert.match(lost.message, /same Idempotency-Key/);

  const retried = await ingest(w, tenant.id, { idempotencyKey: "k-commit" });
  const again = await ingest(w, tenant.id, { idempotencyKey: "k-commit" });
  assert.equal(again.eventId, retried.eventId, "the key's retries are one event");
  assert.equal(await stored("k-commit"), 1);
});

test("an outbox relay gives back the claims a failed round left leased as soon as the database answers, not after their lease", async (t) => {
  if (engineFree(t)) return;
  const db = await openPgliteTestDatabase();
  t.after(() => db.close());
  const link = new DroppingLink(db);
  const w = newWorld(link);
  const tenant = await seedTenant(w);
  await seedSubscription(w, tenant.id);
  const event = await ingest(w, tenant.id);
  const dispatcher = new Dispatcher(link, { clock: w.clock });
  let dropAfterPublish = true;
  const relay = new OutboxRelay(link, {
    clock: w.clock,
    onError: () => {},
    publisher: {
      async publish(published, signal) {
        await dispatcher.publish(published, signal);
        // The link dies between the publish and its mark: the claim is left leased.
        if (dropAfterPublish) link.down = true;
        dropAfterPublish = false;
      },
    },
  });

  await assert.rejects(relay.runOnce(), (error: unknown) => sqlErrors.is(error, "SQL_UNAVAILABLE"));
  link.down = false;
  // Same instant: the lease (30 s) is still running; only the give-back makes the row due.
  const round = await relay.runOnce();
  assert.deepEqual(round, { claimed: 1, published: 1, failed: 0, lost: 0, released: 1 });
  const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM deliveries WHERE event_id = $1", [
    event.eventId,
  ]);
  assert.equal(rows[0]?.n, 1n, "published twice, fanned out once (WH-09)");
  const { rows: outbox } = await db.query<{ unpublished: bigint }>(
    "SELECT count(*) AS unpublished FROM outbox WHERE published_at IS NULL",
  );
  assert.equal(outbox[0]?.unpublished, 0n);
});
