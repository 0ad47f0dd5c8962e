/**
 * The outbox relay (WH-07, WH-14): moves committed events from the outbox to the
 * dispatcher. Each round claims a bounded batch of due rows (SKIP LOCKED + a lease with a
 * fencing token, store/outbox.ts), publishes them one by one with a timeout, and marks
 * each published. Several relays may run at once; they take disjoint rows.
 *
 * At least once, never exactly once: a relay that crashes after a publish and before
 * its mark leaves the row leased; when the lease ends another relay publishes the same
 * event id again. That is harmless by construction — fan-out inserts with
 * ON CONFLICT DO NOTHING on (event_id, subscription_id), WH-09 — and the stable event id
 * travels to receivers so they can dedupe the other duplicate, the lost 2xx.
 *
 * A failed publish gives the row back with a capped, jittered exponential delay
 * (publish_count is the attempt number); it is retried until it succeeds — the event
 * committed, so dropping it would break the producer's contract.
 *
 * The database going away fails whole rounds: the loop then backs off, doubling its pause
 * from pollIntervalMs up to ROUND_ERROR_BACKOFF_MS_MAX, instead of hammering a dead server
 * (and its log) every poll. The claims a failed round could neither mark nor give back stay
 * leased; rather than wait out their lease after the database returns, the relay gives them
 * back first thing in its next round (fenced by their token, so a claim another relay took
 * over meanwhile is left alone).
 *
 * @example
 * const relay = new OutboxRelay(db, { publisher: new Dispatcher(db) });
 * relay.start();
 * // … on shutdown:
 * await relay.stop();
 */
import { randomUUID } from "node:crypto";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { backoffDelayMs, jitterDelayMs } from "@casebook/kit/backoff";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import {
  claimOutbox,
  markPublished,
  type OutboxClaim,
  recordPublishFailure,
  releaseOutboxClaim,
} from "../store/outbox.ts";

/** What the relay hands on: the stable event id and its routing context. */
export interface PublishedEvent {
  eventId: string;
  tenantId: string;
  /** 1 on the first publish; more after a failure or a relay crash (a duplicate publish). */
  publishCount: number;
}

/** Where events go (the dispatcher, a broker, a test's recorder). Must be safe to repeat. */
export interface EventPublisher {
  /** Resolves once the event is handed on; should honour `signal` (the relay times out anyway). */
  publish(event: PublishedEvent, signal: AbortSignal): Promise<void>;
}

export interface OutboxRelayOptions {
  publisher: EventPublisher;
  /** Name in leases; default `relay-<pid>-<random>`. */
  owner?: string;
  clock?: Clock;
  /** Jitter of retry delays. */
  random?: RandomSource;
  /** Rows per claim. Default 100. */
  maxBatch?: number;
  /** How long a claim lasts. Default 30 000. */
  leaseMs?: number;
  /** Bound on one publish; below leaseMs. Default 10 000. */
  publishTimeoutMs?: number;
  /** Wait between rounds when nothing is due. Default 200. */
  pollIntervalMs?: number;
  /** Retry delay after a failed publish: min(cap, base · 2^(n−1)), equal jitter. Defaults 500 / 60 000. */
  retryBaseMs?: number;
  retryCapMs?: number;
  /** Errors the relay survives (database down, publish failures); default console.error. */
  onError?: (err: unknown, eventId: string | undefined) => void;
}

export interface RelayRound {
  claimed: number;
  published: number;
  failed: number;
  /** Marks that lost their claim (another relay had taken the row over). */
  lost: number;
  /** Rows given back: the lease could not cover their publish, or a failed round left them claimed. */
  released: number;
}

export const DEFAULT_RELAY_MAX_BATCH = 100;
export const DEFAULT_RELAY_LEASE_MS = 30_000;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;
export const DEFAULT_RELAY_POLL_MS = 200;
/** Longest pause after failed rounds (the database is down): doubling from pollIntervalMs. */
export const ROUND_ERROR_BACKOFF_MS_MAX = 5_000;

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  return value;
}

/** Runs `publish` with a hard bound: a publisher that ignores its signal still cannot hold the relay. */
async function publishWithin(
  publisher: EventPublisher,
  event: PublishedEvent,
  timeoutMs: number,
): Promise<void> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`publish of ${event.eventId} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([publisher.publish(event, controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class OutboxRelay {
  readonly owner: string;
  readonly #db: Database;
  readonly #publisher: EventPublisher;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #maxBatch: number;
  readonly #leaseMs: number;
  readonly #publishTimeoutMs: number;
  readonly #pollIntervalMs: number;
  readonly #retryBaseMs: number;
  readonly #retryCapMs: number;
  readonly #onError: (err: unknown, eventId: string | undefined) => void;
  readonly #loop: BackgroundLoop;
  /** Claims of a round that failed before settling them (at most maxBatch): given back next round. */
  #unsettled = new Set<OutboxClaim>();

  constructor(db: Database, options: OutboxRelayOptions) {
    this.#db = db;
    this.#publisher = options.publisher;
    this.owner = options.owner ?? `relay-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#maxBatch = positiveInt("maxBatch", options.maxBatch ?? DEFAULT_RELAY_MAX_BATCH);
    this.#leaseMs = positiveInt("leaseMs", options.leaseMs ?? DEFAULT_RELAY_LEASE_MS);
    this.#publishTimeoutMs = positiveInt(
      "publishTimeoutMs",
      options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS,
    );
    this.#pollIntervalMs = positiveInt("pollIntervalMs", options.pollIntervalMs ?? DEFAULT_RELAY_POLL_MS);
    this.#retryBaseMs = positiveInt("retryBaseMs", options.retryBaseMs ?? 500);
    this.#retryCapMs = positiveInt("retryCapMs", options.retryCapMs ?? 60_000);
    this.#onError = options.onError ?? ((err, id) => console.error("outbox relay:", id ?? "-", err));
    // A publish that outlives the lease could overlap another relay's publish of the row.
    if (this.#publishTimeoutMs >= this.#leaseMs) throw new RangeError("publishTimeoutMs must be < leaseMs");
    // A full round means more is due: the next follows at once. Failed rounds double the pause, no jitter.
    this.#loop = new BackgroundLoop({
      name: "relay",
      round: async () => (await this.runOnce()).claimed === this.#maxBatch,
      idleMs: this.#pollIntervalMs,
      failureBackoff: { capMs: ROUND_ERROR_BACKOFF_MS_MAX, jitter: "none" },
      onError: (err) => this.#onError(err, undefined),
    });
  }

  /**
   * One round: claim up to maxBatch due rows, publish and mark each. Deterministic with a
   * manual clock; not to be mixed with `start()`.
   *
   * @example
   * while ((await relay.runOnce()).claimed > 0) {} // drain what is due now
   */
  async runOnce(): Promise<RelayRound> {
    const round: RelayRound = { claimed: 0, published: 0, failed: 0, lost: 0, released: 0 };
    round.released += await this.#releaseUnsettled();
    const nowMs = this.#clock.nowMs();
    const claims = await claimOutbox(this.#db, {
      owner: this.owner,
      nowMs,
      leaseMs: this.#leaseMs,
      maxBatch: this.#maxBatch,
    });
    round.claimed = claims.length;
    // Until each claim is settled (marked, failure recorded, given back or lost), a throw
    // leaves it here for the next round.
    this.#unsettled = new Set(claims);
    const leaseEndMs = nowMs + this.#leaseMs;
    for (const claim of claims) {
      // The lease must cover the whole publish; what it cannot cover goes back at once.
      if (this.#clock.nowMs() + this.#publishTimeoutMs >= leaseEndMs) {
        if (await releaseOutboxClaim(this.#db, claim, this.#clock.nowMs())) round.released += 1;
      } else {
        await this.#publishOne(claim, round);
      }
      this.#unsettled.delete(claim);
    }
    return round;
  }

  /**
   * Gives back, due now, the claims a failed round left leased: their publish may or may
   * not have happened, and publishing again is harmless (WH-09), while waiting out the
   * lease would hold those events back long after the database returned.
   */
  async #releaseUnsettled(): Promise<number> {
    let released = 0;
    for (const claim of this.#unsettled) {
      if (await releaseOutboxClaim(this.#db, claim, this.#clock.nowMs())) released += 1;
      this.#unsettled.delete(claim);
    }
    return released;
  }

  async #publishOne(claim: OutboxClaim, round: RelayRound): Promise<void> {
    const event = { eventId: claim.eventId, tenantId: claim.tenantId, publishCount: claim.publishCount };
    try {
      await publishWithin(this.#publisher, event, this.#publishTimeoutMs);
    } catch (err) {
      round.failed += 1;
      this.#onError(err, claim.eventId);
      const delayMs = backoffDelayMs(claim.publishCount, this.#retryBaseMs, this.#retryCapMs);
      const retryAtMs = this.#clock.nowMs() + Math.round(jitterDelayMs(delayMs, "equal", this.#random));
      const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      if (!(await recordPublishFailure(this.#db, claim, { error, retryAtMs }))) round.lost += 1;
      return;
    }
    if (await markPublished(this.#db, claim, this.#clock.nowMs())) round.published += 1;
    else round.lost += 1;
  }

  /** Starts the background loop: a round whenever the previous one was full, else after pollIntervalMs. */
  start(): void {
    this.#loop.start(); // throws "relay already started" when running
  }

  /** Stops after the current round (each publish is bounded by publishTimeoutMs). */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }
}
