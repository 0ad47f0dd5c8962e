/**
 * The delivery worker (issue 4; WH-01, WH-04, WH-10, WH-11, WH-15, WH-16, WH-18, WH-20,
 * WH-21, WH-23, WH-24): claim → check → sign → send → record, with a bound on everything in
 * between. Three parts, one file each:
 *
 * - **The claim loop** (here, on kit's BackgroundLoop). A claim round splits the free room of
 *   this process's window among tenants with due work by weight (tenant-claimer.ts: weighted
 *   DRR over `dueCountsByTenant`, then `claimDueForTenant` per tenant: SKIP LOCKED + lease +
 *   version CAS). A full round is followed by the next at once; an exhausted one waits a poll
 *   interval; a failed one (the database is down) waits twice as long each time, up to
 *   MAX_CLAIM_ERROR_BACKOFF_MS. A send that ends wakes the loop only while a claim is due
 *   (the last round came back full), so a quiet store is polled at the poll rate, not per send.
 * - **The send window** (send-window.ts): what was claimed, in the fair order it goes out
 *   (DRR across tenants, round robin across a tenant's endpoints, each endpoint's concurrency
 *   and rate limits and Retry-After holds), bounded to 2 × maxInFlight deliveries so leases are
 *   not spent waiting; the store stays the queue of record.
 * - **The delivery pipeline** (delivery-pipeline.ts): for each picked delivery, hold and
 *   budget checks, the re-check under the lease, sign, send, record as one CAS on the lease
 *   version (group-committed), endpoint health, 410 and quarantine.
 *
 * **Database failures** strand claims: a re-check, renewal, deferral or record that fails with
 * SQL_UNAVAILABLE leaves its delivery leased to this worker. Each such claim is remembered (at
 * most the window) and given back first thing in the next round that reaches the database, due
 * now, by a lease-version CAS (stranded-claims.ts), instead of waiting out its lease.
 * **Stop** drains: no new claim, in-flight sends finish and are recorded (each bounded by the
 * request deadline), claimed-but-unsent deliveries are released, due at once.
 *
 * Decisions (leases, deadlines, retry times) use the injected clock; pacing (poll sleeps) is
 * real time, as timers are. `runOnce` runs one round to completion, for tests that drive a
 * ManualClock.
 *
 * @example
 * const worker = new DeliveryWorker({ db, clock: systemClock, random: systemRandom, workerId: "w-1",
 *   sender: new HttpSender({ policy }), httpDeadlineMs: 30_000, leaseMs: 45_000, maxInFlight: 64,
 *   pollIntervalMs: 250, metrics: createWorkerMetrics(service.registry), log: (o, m) => service.log.info(o, m) });
 * worker.start();
 * // on SIGTERM:
 * await worker.stop();
 */

import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { HttpSender } from "../clients/http-sender.ts";
import type { QuarantineBounds } from "../domain/endpoint-health.ts";
import type { RetryPolicy } from "../domain/retry-policy.ts";
import type { RandomBytes } from "../domain/store-ids.ts";
import type { WorkerMetrics } from "../metrics.ts";
import { type ClaimedDelivery, checkLease, MAX_CLAIM_LIMIT, releaseLease } from "../store/delivery-claims.ts";
import { DeliveryPipeline, type RetryBudgetSettings } from "./delivery-pipeline.ts";
import { EndpointLimitsCache } from "./endpoint-limits-cache.ts";
import { QueueGauges } from "./queue-gauges.ts";
import { SendWindow } from "./send-window.ts";
import { StrandedClaims } from "./stranded-claims.ts";
import { TenantClaimer } from "./tenant-claimer.ts";

export type { RetryBudgetSettings } from "./delivery-pipeline.ts";

export interface DeliveryWorkerOptions {
  db: Database;
  clock: Clock;
  random: RandomSource;
  /**
   * Lease owner and attempts.worker_id, 1..200 characters: unique per live worker. After a
   * claim round the database failed, the worker gives back every lease held under this id that
   * it does not hold itself — another worker sharing the id would lose its live leases.
   */
  workerId: string;
  sender: HttpSender;
  /** Bound on one whole request; the sender's phase timeouts should add up to no more. */
  httpDeadlineMs: number;
  /** Claim lease; at least httpDeadlineMs + LEASE_HEADROOM_MS (checkLease). */
  leaseMs: number;
  /** Sends (and their result writes) at once in this process, 1..MAX_IN_FLIGHT. */
  maxInFlight: number;
  /**
   * Sends at once for one tenant. Default: all but a quarter of maxInFlight, so slots held by
   * one tenant's slow endpoints always leave room for the others (WH-15 per-tenant limits).
   * Claimed-but-unsent deliveries are bounded the same way (a quarter of the window).
   */
  maxInFlightPerTenant?: number;
  /** Wait before the next claim when nothing more was due, in ms. */
  pollIntervalMs: number;
  metrics?: WorkerMetrics;
  log?: (obj: Record<string, unknown>, msg: string) => void;
  /** Backoff, deadline and attempt bound; default the seed's (2 s base, 300 s cap, equal jitter). */
  retryPolicy?: RetryPolicy;
  /** WH-20; `false` turns it off. Default { retryFraction: 0.2 }. */
  retryBudget?: RetryBudgetSettings | false;
  /** When an endpoint's client errors are persistent (endpoint-health.ts default: 5 in a row over ≥ 1 h). */
  quarantine?: QuarantineBounds;
  /** Ids of the tenant notices written on a switch-off; default node:crypto's. */
  randomBytes?: RandomBytes;
  /** Oldest-queued-age gauge refresh, in ms. Default 15 000. */
  queueAgeRefreshMs?: number;
  /** Per-state delivery counts refresh (a table scan), in ms. Default 60 000. */
  stateCountsRefreshMs?: number;
}

export const MAX_IN_FLIGHT = 10_000;
/** Claimed deliveries per send slot: enough to keep slots busy between claim rounds. */
export const WINDOW_PER_SLOT = 2;
/** Longest wait after failed claim rounds (the database is down): doubling from pollIntervalMs. */
export const MAX_CLAIM_ERROR_BACKOFF_MS = 5_000;
const LIMITS_TTL_MS = 30_000;
const MAX_LIMITS = 10_000;
const WORKER_ID_MAX_CHARS = 200;

/** "given_back": the round only gave stranded claims back (the window wanted no claim). */
type ClaimOutcome = "full" | "exhausted" | "given_back";
type Log = (obj: Record<string, unknown>, msg: string) => void;

function positiveInt(name: string, value: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max)
    throw new RangeError(`${name} must be an integer in 1..${max}, got ${value}`);
  return value;
}

export class DeliveryWorker {
  readonly #o: DeliveryWorkerOptions;
  readonly #log: Log;
  readonly #claimer: TenantClaimer;
  readonly #limits: EndpointLimitsCache;
  readonly #gauges: QueueGauges | undefined;
  /** Claims a database failure left leased to this worker: given back next round. */
  readonly #stranded: StrandedClaims;
  readonly #window: SendWindow;
  readonly #pipeline: DeliveryPipeline;
  readonly #claims: BackgroundLoop;
  #weights = new Map<string, number>();
  /** The last round came back full (or only gave back): a freed slot may claim at once. */
  #claimDue = true;

  constructor(o: DeliveryWorkerOptions) {
    checkLease(o.leaseMs, o.httpDeadlineMs);
    positiveInt("maxInFlight", o.maxInFlight, MAX_IN_FLIGHT);
    positiveInt("pollIntervalMs", o.pollIntervalMs, 60_000);
    if (o.workerId.length < 1 || o.workerId.length > WORKER_ID_MAX_CHARS)
      throw new RangeError(`workerId must be 1..${WORKER_ID_MAX_CHARS} characters`);
    this.#o = o;
    this.#log = o.log ?? (() => {});
    const maxQueued = Math.min(o.maxInFlight * WINDOW_PER_SLOT, MAX_CLAIM_LIMIT * WINDOW_PER_SLOT);
    // A quarter of the send slots stays free of any one tenant.
    const maxInFlightPerTenant = positiveInt(
      "maxInFlightPerTenant",
      o.maxInFlightPerTenant ?? Math.max(1, o.maxInFlight - Math.floor(o.maxInFlight / 4)),
      o.maxInFlight,
    );
    this.#claimer = new TenantClaimer(o.db, o);
    this.#stranded = new StrandedClaims(o.db, { workerId: o.workerId, max: maxQueued });
    this.#limits = new EndpointLimitsCache(o.db, {
      clock: o.clock,
      ttlMs: LIMITS_TTL_MS,
      maxEntries: MAX_LIMITS,
    });
    this.#window = new SendWindow({
      clock: o.clock,
      maxQueued,
      maxInFlight: o.maxInFlight,
      maxInFlightPerTenant,
      weightOf: (tenantId) => this.#weights.get(tenantId) ?? 1,
      limitsOf: (endpointId) => this.#limits.limitsOf(endpointId),
      send: (lease) => this.#pipeline.process(lease.item),
      release: async (claimed: ClaimedDelivery) => {
        await releaseLease(o.db, claimed, o.clock.nowMs());
      },
      onSlotFree: () => {
        if (this.#claimDue && this.#wantsRound()) this.#claims.wake();
      },
      ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
      log: this.#log,
    });
    this.#pipeline = new DeliveryPipeline({
      ...o,
      stranded: this.#stranded,
      throttle: (endpointId, untilMonotonicMs) => this.#window.throttle(endpointId, untilMonotonicMs),
    });
    this.#gauges =
      o.metrics &&
      new QueueGauges(o.db, o.metrics, {
        clock: o.clock,
        ageRefreshMs: o.queueAgeRefreshMs ?? 15_000,
        countsRefreshMs: o.stateCountsRefreshMs ?? 60_000,
        onError: (err) => this.#log({ err }, "delivery worker: queue gauges refresh failed"),
      });
    this.#claims = new BackgroundLoop({
      name: "delivery worker claims",
      round: () => this.#claimLoopRound(),
      idleMs: o.pollIntervalMs,
      failureBackoff: { capMs: MAX_CLAIM_ERROR_BACKOFF_MS, jitter: "none" },
      onError: (err) => this.#log({ err }, "delivery worker: claim round failed; retrying after a pause"),
    });
  }

  /** Starts the claim loop; sends start as deliveries are claimed and slots free. */
  start(): void {
    if (this.#claims.running) throw new Error("delivery worker already started");
    this.#claimDue = true;
    this.#window.open();
    this.#claims.start();
  }

  /** Stops claiming, drains in-flight sends and their writes, and releases unsent claims. */
  async stop(): Promise<void> {
    this.#window.close(); // no send starts from here on
    await this.#claims.stop();
    await this.#drain(false);
    await this.#window.releaseUnpicked();
    await this.#giveBackOnStop();
    await this.#gauges?.settled();
  }

  /**
   * One round, to completion: claim what is due now, send everything sendable now, record
   * it all. For tests on a ManualClock; not to be mixed with `start()`.
   *
   * @example
   * while ((await worker.runOnce()).claimed > 0) {} // deliver what is due now
   */
  async runOnce(): Promise<{ claimed: number }> {
    if (this.#claims.running) throw new Error("runOnce() on a started worker");
    await this.#giveBackStranded();
    const claimed = await this.#claim();
    await this.#drain(true);
    return { claimed };
  }

  /** Deliveries claimed and not yet started, and sends in flight, in this process. */
  get load(): { queued: number; inFlight: number } {
    return this.#window.load;
  }

  /** One pass of the claim loop: true (claim again at once) when the round filled the window's room. */
  async #claimLoopRound(): Promise<boolean> {
    try {
      if (!this.#wantsRound()) {
        this.#claimDue = true;
        return false;
      }
      this.#claimDue = false; // a failed round waits out its backoff, whatever ends meanwhile
      const outcome = await this.#claimRound();
      this.#window.pump();
      this.#claimDue = outcome !== "exhausted";
      return this.#claimDue;
    } finally {
      // After the claim and its sends: the gauges count what this round leased as in flight.
      this.#gauges?.refreshIfDue();
    }
  }

  /** A claim round is due when the window wants one, or stranded claims wait to be given back. */
  #wantsRound(): boolean {
    return this.#stranded.owed || this.#window.wantsClaim();
  }

  async #claimRound(): Promise<ClaimOutcome> {
    await this.#giveBackStranded();
    if (!this.#window.wantsClaim()) return "given_back";
    const room = this.#window.room();
    const claimed = await this.#claim();
    return claimed >= room ? "full" : "exhausted";
  }

  async #claim(): Promise<number> {
    try {
      const round = await this.#claimer.claim(this.#window.room(), (tenantId) =>
        this.#window.tenantRoom(tenantId),
      );
      if (round.weights.size > 0) this.#weights = round.weights;
      try {
        await this.#limits.load(round.claimed.map((c) => c.subscriptionId));
      } catch (err) {
        this.#log({ err }, "delivery worker: endpoint limits unreadable; using defaults this round");
      }
      for (const claimed of round.claimed) await this.#window.add(claimed);
      return round.claimed.length;
    } catch (err) {
      // A claim whose answer was lost, or a round cut short, may have leased rows this worker never saw.
      this.#stranded.claimFailed();
      throw err;
    }
  }

  /** First thing in a round: what a database failure stranded goes back; throws while it is still down. */
  async #giveBackStranded(): Promise<void> {
    if (!this.#stranded.owed) return;
    const back = await this.#stranded.giveBack(this.#o.clock.nowMs(), () => this.#window.held());
    this.#log({ ...back }, "delivery worker: gave back the claims a database failure stranded");
  }

  async #giveBackOnStop(): Promise<void> {
    try {
      await this.#giveBackStranded();
    } catch (err) {
      this.#log({ err }, "delivery worker: stranded claims not given back; their leases will expire");
    }
  }

  /** Sends in flight (and, with `pump`, every one sendable now), then their batched writes. */
  async #drain(pump: boolean): Promise<void> {
    await this.#window.drain(pump);
    await this.#pipeline.drain();
  }
}

// The metrics factory and type are part of the worker's interface (main.ts wires both).
export { createWorkerMetrics, type WorkerMetrics } from "../metrics.ts";
