/**
 * The outbox relay (PY-11): publishes outbox events in order per ordering key (the
 * account) and in parallel across keys — what the seed does with an SQS FIFO queue
 * grouped by account, done here over the transactional outbox.
 *
 * How: the relay keeps up to `maxInFlightKeys` keys in flight, each in its own task.
 * A free slot claims a due key (`claimStreams`: FOR UPDATE SKIP LOCKED + a lease with a
 * fencing token), publishes that key's next `maxBatchPerKey` events ONE AT A TIME in seq
 * order, marking each published before the next, then gives the key back. So a key
 * never has two events in flight, while a slow key holds one slot only: other keys'
 * events keep flowing. Several relay processes may run at once: the lease keeps one
 * relay per key, so per-key order holds across them.
 *
 * Delivery is at least once: a relay that dies between publishing and marking leaves
 * the event to be republished when its lease expires, under the same `eventId`, which
 * consumers dedupe on. Without crashes or lease expiry each event is published once.
 * A failed publish is retried with the kit's backoff; the key's later events wait
 * behind it (order is never traded for progress) and after `maxAttempts` the key is
 * parked for an operator (`resumeStream`).
 *
 * @example
 * const relay = new OutboxRelay(db, { publisher: createWebhookPublisher({ url }), random: systemRandom });
 * relay.start();
 * // … on shutdown:
 * await relay.stop();
 */
import { randomUUID } from "node:crypto";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { outboxErrors } from "../domain/outbox-errors.ts";
import {
  claimStreams,
  loadBatch,
  markPublished,
  type OutboxEvent,
  recordFailure,
  releaseStream,
  type StreamClaim,
} from "../store/outbox.ts";
import { loopFailureBackoff } from "./loop-backoff.ts";

/** Where events go: a webhook service, a broker, a test's recorder. Must be safe to repeat. */
export interface EventPublisher {
  /** Resolves once the consumer accepted `event`; rejects (or honours `signal`) otherwise. */
  publish(event: OutboxEvent, signal: AbortSignal): Promise<void>;
}

export interface OutboxRelayOptions {
  publisher: EventPublisher;
  /** Name of this relay in leases; default `relay-<pid>-<random>`. */
  owner?: string;
  clock?: Clock;
  /** Jitter source of the default backoff and of the wait after failed claims. */
  random?: RandomSource;
  /** Most keys published at once (parallelism across accounts). Default 16. */
  maxInFlightKeys?: number;
  /** Most events of one key published per claim before the key is given back. Default 100. */
  maxBatchPerKey?: number;
  /** How long a claim lasts without progress; each published event extends it. Default 30 000. */
  leaseMs?: number;
  /** Bound on one publish; must be below leaseMs. Default 10 000. */
  publishTimeoutMs?: number;
  /** Wait between claims when nothing is due. Default 200. */
  pollIntervalMs?: number;
  /** Retry policy of a failing head event. Default 500 ms doubling to 60 s, equal jitter, 25 attempts. */
  backoff?: BackoffPolicy;
  /** Told about errors the relay survives (database down, lost claims); default console.error. */
  onError?: (err: unknown, orderingKey: string | undefined) => void;
}

/** What `runOnce` did. */
export interface RelayRoundStats {
  keys: number;
  published: number;
  failed: number;
}

export const DEFAULT_MAX_IN_FLIGHT_KEYS = 16;
export const DEFAULT_MAX_BATCH_PER_KEY = 100;
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;
export const DEFAULT_POLL_INTERVAL_MS = 200;

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  return value;
}

function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

export class OutboxRelay {
  readonly owner: string;
  readonly #db: Database;
  readonly #publisher: EventPublisher;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #backoff: BackoffPolicy;
  readonly #onError: (err: unknown, orderingKey: string | undefined) => void;
  readonly #maxInFlightKeys: number;
  readonly #maxBatchPerKey: number;
  readonly #leaseMs: number;
  readonly #publishTimeoutMs: number;
  readonly #pollIntervalMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  /**
   * The keys those tasks publish, each with the claim its task holds: any other key leased to
   * this relay is orphaned and claimed again. A claim, not a bare key: a key released by one task
   * can be claimed again (the next claim's answer may arrive before the release's own) by a
   * second task before the first one's clean-up runs, and that clean-up must not unlist it.
   */
  readonly #keysInFlight = new Map<string, StreamClaim>();
  #round: RelayRoundStats = { keys: 0, published: 0, failed: 0 };
  readonly #loop: BackgroundLoop;
  /** True while stop() runs: in-flight keys stop after their current publish. */
  #stopping = false;

  constructor(db: Database, options: OutboxRelayOptions) {
    this.#db = db;
    this.#publisher = options.publisher;
    this.owner = options.owner ?? `relay-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#backoff =
      options.backoff ??
      new BackoffPolicy({
        baseMs: 500,
        capMs: 60_000,
        jitter: "equal",
        random: this.#random,
        maxAttempts: 25,
      });
    this.#onError = options.onError ?? ((err, key) => console.error("outbox relay:", key ?? "-", err));
    this.#maxInFlightKeys = positiveInt(
      "maxInFlightKeys",
      options.maxInFlightKeys ?? DEFAULT_MAX_IN_FLIGHT_KEYS,
    );
    this.#maxBatchPerKey = positiveInt("maxBatchPerKey", options.maxBatchPerKey ?? DEFAULT_MAX_BATCH_PER_KEY);
    this.#leaseMs = positiveInt("leaseMs", options.leaseMs ?? DEFAULT_LEASE_MS);
    this.#publishTimeoutMs = positiveInt(
      "publishTimeoutMs",
      options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS,
    );
    this.#pollIntervalMs = positiveInt("pollIntervalMs", options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
    // A publish that outlives the lease could overlap another relay's publish of the key.
    if (this.#publishTimeoutMs >= this.#leaseMs) throw new RangeError("publishTimeoutMs must be < leaseMs");
    // A freed slot wakes the loop; failed claims (the database unreachable) grow its pause (loop-backoff.ts).
    this.#loop = new BackgroundLoop({
      name: "relay",
      round: () => this.#claimFreeSlots(),
      idleMs: this.#pollIntervalMs,
      failureBackoff: loopFailureBackoff(this.#random),
      onError: (err) => this.#onError(err, undefined),
    });
  }

  /** Keys being published right now. */
  get inFlightKeys(): number {
    return this.#inFlight.size;
  }

  /**
   * One deterministic round, for tests and cron-style use: claims up to
   * `maxInFlightKeys` due keys, publishes a batch of each (keys in parallel), and
   * resolves when all are done. Not to be mixed with `start()`.
   *
   * @example
   * while ((await relay.runOnce()).keys > 0) {} // drain everything due now
   */
  async runOnce(): Promise<RelayRoundStats> {
    this.#round = { keys: 0, published: 0, failed: 0 };
    const claims = await this.#claim(this.#maxInFlightKeys);
    this.#round.keys = claims.length;
    await Promise.all(claims.map((claim) => this.#processKey(claim)));
    return this.#round;
  }

  /** Starts the background loop: claims keys whenever a slot is free, polls when idle. */
  start(): void {
    // Until stop() has drained the in-flight keys the relay counts as started.
    if (this.#stopping) throw new Error("relay already started");
    this.#loop.start(); // throws "relay already started" when running
  }

  /**
   * Stops claiming, lets each in-flight key finish its current publish (bounded by
   * publishTimeoutMs), gives the keys back, and resolves when all is quiet.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    try {
      await this.#loop.stop();
      await Promise.all(this.#inFlight);
    } finally {
      this.#stopping = false;
    }
  }

  /**
   * One loop round: claims a due key for each free slot and spawns its task. True when every
   * free slot got a key (more may be due); with no free slot it waits for a freed one (wake).
   */
  async #claimFreeSlots(): Promise<boolean> {
    const free = this.#maxInFlightKeys - this.#inFlight.size;
    if (free <= 0) return false;
    const claims = await this.#claim(free);
    for (const claim of claims) this.#spawn(claim);
    return claims.length === free;
  }

  #spawn(claim: StreamClaim): void {
    this.#keysInFlight.set(claim.orderingKey, claim);
    const task = this.#processKey(claim).finally(() => {
      this.#inFlight.delete(task);
      if (this.#keysInFlight.get(claim.orderingKey) === claim) this.#keysInFlight.delete(claim.orderingKey);
      this.#loop.wake();
    });
    this.#inFlight.add(task);
  }

  /**
   * Claims due keys, and takes back at once this relay's own keys that no task publishes: a
   * round the database failed left them leased, and waiting out the lease would hold their
   * events for `leaseMs` after the database came back.
   */
  #claim(maxKeys: number): Promise<StreamClaim[]> {
    return claimStreams(this.#db, {
      owner: this.owner,
      maxKeys,
      leaseMs: this.#leaseMs,
      nowMs: this.#clock.nowMs(),
      reclaimOwnExcept: [...this.#keysInFlight.keys()],
    });
  }

  /** Publishes one claimed key's batch in seq order; never throws (errors are reported). */
  async #processKey(claim: StreamClaim): Promise<void> {
    try {
      const events = await loadBatch(this.#db, claim, this.#maxBatchPerKey);
      for (const event of events) {
        if (this.#stopping) break;
        const outcome = await this.#publishOne(claim, event);
        if (outcome !== "published") return; // failure recorded or claim lost: the key is not ours
      }
      await releaseStream(this.#db, claim);
    } catch (err) {
      // The database failed mid-batch: the lease expires and another round retries the key.
      this.#onError(err, claim.orderingKey);
    }
  }

  async #publishOne(claim: StreamClaim, event: OutboxEvent): Promise<"published" | "failed" | "lost"> {
    try {
      await this.#publishWithTimeout(event);
    } catch (err) {
      this.#round.failed += 1;
      await this.#recordFailure(claim, event, err);
      return "failed";
    }
    const marked = await markPublished(this.#db, claim, event, {
      leaseMs: this.#leaseMs,
      nowMs: this.#clock.nowMs(),
    });
    if (!marked) {
      // Another relay took the key over after our lease expired; it republishes from its own start.
      this.#onError(
        new Error(`lost the claim on ${claim.orderingKey} at seq ${event.seq}`),
        claim.orderingKey,
      );
      return "lost";
    }
    this.#round.published += 1;
    return "published";
  }

  async #recordFailure(claim: StreamClaim, event: OutboxEvent, err: unknown): Promise<void> {
    const nowMs = this.#clock.nowMs();
    const decision = this.#backoff.next(claim.attempts + 1, Math.max(0, nowMs - event.createdAtMs));
    const retryAtMs = decision.retry ? nowMs + decision.delayMs : undefined;
    if (!decision.retry) this.#onError(err, claim.orderingKey); // parked: an operator must look
    await recordFailure(this.#db, claim, { error: errorText(err), nowMs, retryAtMs });
  }

  async #publishWithTimeout(event: OutboxEvent): Promise<void> {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const err = outboxErrors.create("PAYMENTS_OUTBOX_PUBLISH_FAILED", {
          detail: `publish of ${event.eventId} timed out after ${this.#publishTimeoutMs} ms`,
        });
        controller.abort(err);
        reject(err);
      }, this.#publishTimeoutMs);
    });
    const publishing = this.#publisher.publish(event, controller.signal);
    // After a timeout the publisher may still reject; that late outcome is already decided.
    publishing.catch(() => {});
    try {
      await Promise.race([publishing, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
