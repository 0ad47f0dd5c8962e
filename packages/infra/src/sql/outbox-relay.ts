/**
 * The outbox relay: publishes what an outbox (`outbox.ts`) holds, at least once, under each
 * event's stable id, on kit's BackgroundLoop. Several relays (threads, processes, hosts) may
 * run at once on one database: the lease queue under the outbox keeps one relay per item.
 *
 * - **Ordered** (`OrderedOutbox`): up to `maxInFlightKeys` keys in flight, each in its own
 *   task. A free slot claims a due key, publishes its next `maxBatch` events ONE AT A TIME in
 *   seq order, then gives the key back. A key never has two events in flight, while a slow key
 *   holds one slot only. Progress is marked (which extends the lease) after every `markEvery`
 *   events (default 1: each), and always at the batch's end, before a failure is recorded,
 *   and before the lease could end inside the next publish: one mark — one write and one
 *   commit on the key's hot stream row — per run of events instead of per event.
 * - **Unordered** (`UnorderedOutbox`): each round claims up to `maxBatch` rows and publishes
 *   them one by one; a full round means more is due and the next follows at once.
 *
 * One set of rules for both:
 * - a publish is bounded by `publishTimeoutMs` (< `leaseMs`), and is not started when the
 *   lease could end inside it: that item goes back at once (`released`) instead;
 * - a failed publish counts an attempt and makes the item due after min(retryCapMs,
 *   retryBaseMs · 2^(n−1)) with `retryJitter`; after `maxAttempts` consecutive failures it is
 *   parked for an operator (`resume`) — order forbids skipping a key's head, and a row that
 *   always fails should not spin; Infinity never parks;
 * - a relay that dies between publish and mark leaves the item leased: after the lease
 *   another relay publishes it again, same event id — consumers dedupe (ordered, up to
 *   `markEvery` events of the key are sent again);
 * - when the database fails a round or a task, claims may be left leased to this relay (a
 *   mark that never landed, a claim whose answer was lost): before its next claim the relay
 *   gives back every item leased to it that no task of its own works on (`releaseOrphaned`),
 *   so they flow again as soon as the database answers, not after their lease;
 * - failed rounds (the database unreachable) grow the loop's pause (`failureBackoff`).
 *
 * @example
 * const relay = new OutboxRelay(db, { outbox: new OrderedOutbox(), publisher, random: systemRandom });
 * relay.start();
 * // … on shutdown:
 * await relay.stop();
 */
import { BackgroundLoop, type FailureBackoff } from "@casebook/kit/background-loop";
import { backoffDelayMs, type JitterMode, jitterDelayMs } from "@casebook/kit/backoff";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { leaseOwnerId } from "./lease-owner.ts";
import type { LeaseId } from "./lease-queue.ts";
import { MAX_LEASE_MS } from "./lease-queue.ts";
import {
  MAX_OUTBOX_BATCH,
  MAX_OUTBOX_CLAIM,
  type OutboxClaim,
  type OutboxEventBase,
  type OutboxStore,
} from "./outbox.ts";
import { outboxErrors } from "./outbox-errors.ts";
import type { Database } from "./sql.ts";

/** Where events go: a webhook service, a broker, a fan-out, a test's recorder. Must be safe to repeat. */
export interface EventPublisher<E> {
  /** Resolves once the consumer accepted `event`; should honour `signal` (the relay times out anyway). */
  publish(event: E, signal: AbortSignal): Promise<void>;
}

export interface OutboxRelayOptions<E extends OutboxEventBase> {
  outbox: OutboxStore<E>;
  publisher: EventPublisher<E>;
  /** Owner id in leases; default `leaseOwnerId("outbox")`. */
  owner?: string;
  clock?: Clock;
  /** Jitter of retry delays (and of `failureBackoff` when it asks for one). */
  random?: RandomSource;
  /** Ordered: most keys published at once. Unordered: 1 (a round's rows go one by one). Default 16 / 1. */
  maxInFlightKeys?: number;
  /** Ordered: events of one key per claim. Unordered: rows per claim. Default 100. */
  maxBatch?: number;
  /**
   * Ordered: events published between two marks at most — also the most a relay that dies
   * publishes again. Default 1 (each event marked before the next). Unordered: always 1.
   */
  markEvery?: number;
  /** How long a claim lasts without progress (ordered: each mark extends it). Default 30 000. */
  leaseMs?: number;
  /** Bound on one publish; below leaseMs. Default 10 000. */
  publishTimeoutMs?: number;
  /** Wait between claims when nothing is due. Default 200. */
  pollIntervalMs?: number;
  /** Delay after an item's first failed publish; doubles per failure. Default 500. */
  retryBaseMs?: number;
  /** Longest delay between two publishes of a failing item. Default 60 000. */
  retryCapMs?: number;
  /** Default `equal`: in [delay/2, delay). */
  retryJitter?: JitterMode;
  /** Consecutive failures after which the item is parked; Infinity never parks. Default 25. */
  maxAttempts?: number;
  /** The loop's pause after failed rounds. Default: doubling from pollIntervalMs to 5 000, no jitter. */
  failureBackoff?: FailureBackoff;
  /** Errors the relay survives, with the key (ordered) or event id (unordered) concerned; default console.error. */
  onError?: (err: unknown, label: string | undefined) => void;
}

/** What a round did (`runOnce`; for the background loop, the sum is not kept). */
export interface RelayRound {
  /** Keys (ordered) or rows (unordered) claimed. */
  claimed: number;
  published: number;
  failed: number;
  /** Marks that lost their claim (another relay had taken the item over). */
  lost: number;
  /** Items given back: the lease could not cover their publish, or a failure had stranded them. */
  released: number;
}

export const DEFAULT_RELAY_MAX_IN_FLIGHT_KEYS = 16;
export const DEFAULT_RELAY_MAX_BATCH = 100;
export const DEFAULT_RELAY_LEASE_MS = 30_000;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;
export const DEFAULT_RELAY_POLL_MS = 200;
export const DEFAULT_RETRY_BASE_MS = 500;
export const DEFAULT_RETRY_CAP_MS = 60_000;
export const DEFAULT_MAX_ATTEMPTS = 25;
/** Longest pause after failed rounds (the database is down), by default: doubling from pollIntervalMs. */
export const MAX_ROUND_ERROR_BACKOFF_MS = 5_000;
/** Bounds of the knobs. */
export const MAX_IN_FLIGHT_KEYS = 1_000;
export const MAX_RELAY_POLL_MS = 3_600_000;
export const MAX_ATTEMPTS_FINITE = 1_000_000;

function intIn(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  return value;
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function emptyRound(): RelayRound {
  return { claimed: 0, published: 0, failed: 0, lost: 0, released: 0 };
}

/** The relay over one outbox; see the file comment. */
export class OutboxRelay<E extends OutboxEventBase> {
  readonly owner: string;
  readonly #db: Database;
  readonly #outbox: OutboxStore<E>;
  readonly #publisher: EventPublisher<E>;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #onError: (err: unknown, label: string | undefined) => void;
  readonly #ordered: boolean;
  readonly #maxInFlightKeys: number;
  readonly #maxBatch: number;
  readonly #markEvery: number;
  readonly #leaseMs: number;
  readonly #publishTimeoutMs: number;
  readonly #retryBaseMs: number;
  readonly #retryCapMs: number;
  readonly #retryJitter: JitterMode;
  readonly #maxAttempts: number;
  readonly #loop: BackgroundLoop;
  /** Ordered: the tasks publishing a key each. */
  readonly #inFlight = new Set<Promise<void>>();
  /**
   * The items this relay works on right now, each with its claim: any other item leased to this
   * relay after a failure is stranded. A claim, not a bare id: an item released by one task can
   * be claimed again by a second task before the first one's clean-up runs, and that clean-up
   * must not unlist it.
   */
  readonly #working = new Map<LeaseId, OutboxClaim<E>>();
  /** Set by a failure that may have left claims leased to this relay; cleared by releaseOrphaned. */
  #stranded = false;
  /** True while stop() runs: work in flight stops after its current publish. */
  #stopping = false;
  #round: RelayRound = emptyRound();

  constructor(db: Database, options: OutboxRelayOptions<E>) {
    this.#db = db;
    this.#outbox = options.outbox;
    this.#publisher = options.publisher;
    this.#ordered = options.outbox.discipline === "ordered";
    this.owner = options.owner ?? leaseOwnerId("outbox");
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#onError = options.onError ?? ((err, label) => console.error("outbox relay:", label ?? "-", err));
    this.#maxInFlightKeys = intIn(
      "maxInFlightKeys",
      options.maxInFlightKeys ?? (this.#ordered ? DEFAULT_RELAY_MAX_IN_FLIGHT_KEYS : 1),
      1,
      this.#ordered ? MAX_IN_FLIGHT_KEYS : 1,
    );
    this.#maxBatch = intIn(
      "maxBatch",
      options.maxBatch ?? DEFAULT_RELAY_MAX_BATCH,
      1,
      this.#ordered ? MAX_OUTBOX_BATCH : MAX_OUTBOX_CLAIM,
    );
    this.#markEvery = intIn("markEvery", options.markEvery ?? 1, 1, this.#ordered ? MAX_OUTBOX_BATCH : 1);
    this.#leaseMs = intIn("leaseMs", options.leaseMs ?? DEFAULT_RELAY_LEASE_MS, 2, MAX_LEASE_MS);
    this.#publishTimeoutMs = intIn(
      "publishTimeoutMs",
      options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS,
      1,
      MAX_LEASE_MS,
    );
    // A publish that outlives the lease could overlap another relay's publish of the item.
    if (this.#publishTimeoutMs >= this.#leaseMs) throw new RangeError("publishTimeoutMs must be < leaseMs");
    const pollIntervalMs = intIn(
      "pollIntervalMs",
      options.pollIntervalMs ?? DEFAULT_RELAY_POLL_MS,
      1,
      MAX_RELAY_POLL_MS,
    );
    this.#retryBaseMs = intIn("retryBaseMs", options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS, 1, MAX_LEASE_MS);
    this.#retryCapMs = intIn(
      "retryCapMs",
      options.retryCapMs ?? DEFAULT_RETRY_CAP_MS,
      this.#retryBaseMs,
      MAX_LEASE_MS,
    );
    this.#retryJitter = options.retryJitter ?? "equal";
    if (!["none", "full", "equal"].includes(this.#retryJitter))
      throw new RangeError(`retryJitter must be none, full or equal, got ${String(this.#retryJitter)}`);
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (this.#maxAttempts !== Number.POSITIVE_INFINITY)
      intIn("maxAttempts", this.#maxAttempts, 1, MAX_ATTEMPTS_FINITE);
    this.#loop = new BackgroundLoop({
      name: "relay",
      round: this.#ordered
        ? () => this.#claimFreeSlots()
        : async () => (await this.runOnce()).claimed === this.#maxBatch,
      idleMs: pollIntervalMs,
      failureBackoff: options.failureBackoff ?? { capMs: MAX_ROUND_ERROR_BACKOFF_MS, jitter: "none" },
      onError: (err) => this.#onError(err, undefined),
    });
  }

  /** Keys (ordered) being published right now. */
  get inFlightKeys(): number {
    return this.#inFlight.size;
  }

  /**
   * One deterministic round, for tests and cron-style use: claims what is due (ordered: up to
   * maxInFlightKeys keys, published in parallel; unordered: up to maxBatch rows, one by one)
   * and resolves when all is settled. Not to be mixed with `start()`. Unordered, a database
   * failure rejects it; ordered, a key's failure is reported to onError.
   *
   * @example
   * while ((await relay.runOnce()).claimed > 0) {} // drain everything due now
   */
  async runOnce(): Promise<RelayRound> {
    const round = emptyRound();
    this.#round = round;
    const claims = await this.#claim(this.#ordered ? this.#maxInFlightKeys : this.#maxBatch);
    round.claimed = claims.length;
    if (this.#ordered) {
      await Promise.all(claims.map((claim) => this.#track(claim, this.#processKey(claim))));
      return round;
    }
    for (const claim of claims) this.#working.set(claim.lease.id, claim);
    try {
      for (const claim of claims) {
        if (this.#stopping) {
          if (await this.#outbox.release(this.#db, claim, this.#clock.nowMs())) round.released += 1;
        } else await this.#process(claim, [claim.event!]);
        this.#working.delete(claim.lease.id);
      }
    } catch (err) {
      this.#stranded = true; // the rest stays leased to us: given back before the next claim
      throw err;
    } finally {
      this.#working.clear();
    }
    return round;
  }

  /** Starts the background loop: claims whenever there is room, polls when idle. */
  start(): void {
    // Until stop() has drained the work in flight the relay counts as started.
    if (this.#stopping) throw new Error("relay already started");
    this.#loop.start(); // throws "relay already started" when running
  }

  /** Stops claiming; work in flight stops after its current publish and is given back; resolves when quiet. */
  async stop(): Promise<void> {
    this.#stopping = true;
    try {
      await this.#loop.stop();
      await Promise.all(this.#inFlight);
    } finally {
      this.#stopping = false;
    }
  }

  /** Ordered loop round: a key per free slot, each in its own task. True when every free slot got one. */
  async #claimFreeSlots(): Promise<boolean> {
    this.#round = emptyRound();
    const free = this.#maxInFlightKeys - this.#inFlight.size;
    if (free <= 0) return false;
    const claims = await this.#claim(free);
    for (const claim of claims) {
      const task = this.#track(claim, this.#processKey(claim)).finally(() => {
        this.#inFlight.delete(task);
        this.#loop.wake();
      });
      this.#inFlight.add(task);
    }
    return claims.length === free;
  }

  /** Lists `claim` as worked on until `work` settles. */
  #track(claim: OutboxClaim<E>, work: Promise<void>): Promise<void> {
    this.#working.set(claim.lease.id, claim);
    return work.finally(() => {
      if (this.#working.get(claim.lease.id) === claim) this.#working.delete(claim.lease.id);
    });
  }

  /** Gives back what a failure stranded (first), then claims up to `limit` items. */
  async #claim(limit: number): Promise<OutboxClaim<E>[]> {
    try {
      if (this.#stranded) {
        this.#stranded = false;
        this.#round.released += await this.#outbox.releaseOrphaned(this.#db, {
          owner: this.owner,
          keep: [...this.#working.keys()],
          nowMs: this.#clock.nowMs(),
        });
      }
      return await this.#outbox.claim(this.#db, {
        owner: this.owner,
        nowMs: this.#clock.nowMs(),
        leaseMs: this.#leaseMs,
        minLeaseMs: this.#publishTimeoutMs + 1,
        limit,
      });
    } catch (err) {
      this.#stranded = true; // the claim may have committed with its answer lost
      throw err;
    }
  }

  /** Publishes one claimed key's batch in seq order, then gives it back; never throws (errors are reported). */
  async #processKey(claim: OutboxClaim<E>): Promise<void> {
    try {
      const events = await this.#outbox.load(this.#db, claim, this.#maxBatch);
      if (!(await this.#process(claim, events))) return; // failure recorded, lost, or given back
      await this.#outbox.release(this.#db, claim, this.#clock.nowMs());
    } catch (err) {
      // The database failed mid-batch: the key stays leased to us, given back before the next claim.
      this.#stranded = true;
      this.#onError(err, claim.label);
    }
  }

  /**
   * Publishes `events` of `claim` one by one, marking progress (see the file comment). True when
   * all were published and marked and the claim is still held (ordered: to be released); false
   * when it ended otherwise.
   */
  async #process(claim: OutboxClaim<E>, events: readonly E[]): Promise<boolean> {
    const progress = { last: undefined as E | undefined, count: 0 };
    for (const event of events) {
      // The lease must cover the whole publish: mark what is done (which extends it), and give
      // back what it still cannot cover.
      if (this.#stopping || this.#leaseTooShort(claim)) {
        if (!(await this.#mark(claim, progress))) return false;
        if (this.#stopping || this.#leaseTooShort(claim)) {
          if (await this.#outbox.release(this.#db, claim, this.#clock.nowMs())) this.#round.released += 1;
          return false;
        }
      }
      try {
        await this.#publishWithin(event);
      } catch (err) {
        if (!(await this.#mark(claim, progress))) return false;
        this.#round.failed += 1;
        await this.#recordFailure(claim, err);
        return false;
      }
      progress.last = event;
      progress.count += 1;
      if (progress.count >= this.#markEvery && !(await this.#mark(claim, progress))) return false;
    }
    return (await this.#mark(claim, progress)) && this.#ordered;
  }

  #leaseTooShort(claim: OutboxClaim<E>): boolean {
    return this.#clock.nowMs() + this.#publishTimeoutMs >= claim.lease.leaseExpiresAtMs;
  }

  /** Marks every event published since the last mark (up to `progress.last`); false when the claim was lost. */
  async #mark(claim: OutboxClaim<E>, progress: { last: E | undefined; count: number }): Promise<boolean> {
    if (progress.last === undefined) return true;
    const marked = await this.#outbox.markPublished(this.#db, claim, progress.last, {
      nowMs: this.#clock.nowMs(),
      leaseMs: this.#leaseMs,
    });
    if (!marked) {
      // Another relay took the item over after our lease expired; it publishes from its own start.
      this.#round.lost += 1;
      this.#onError(new Error(`lost the claim on ${claim.label} at ${progress.last.eventId}`), claim.label);
      return false;
    }
    this.#round.published += progress.count;
    progress.last = undefined;
    progress.count = 0;
    return true;
  }

  async #recordFailure(claim: OutboxClaim<E>, err: unknown): Promise<void> {
    const attempt = claim.attempts + 1;
    const nowMs = this.#clock.nowMs();
    let retryAtMs: number | undefined;
    if (attempt < this.#maxAttempts) {
      const delayMs = backoffDelayMs(attempt, this.#retryBaseMs, this.#retryCapMs);
      retryAtMs = nowMs + Math.round(jitterDelayMs(delayMs, this.#retryJitter, this.#random));
    }
    this.#onError(err, claim.label); // parked (retryAtMs undefined): an operator must look
    if (!(await this.#outbox.recordFailure(this.#db, claim, { error: errorText(err), nowMs, retryAtMs })))
      this.#round.lost += 1;
  }

  /** Runs `publish` with a hard bound: a publisher that ignores its signal still cannot hold the relay. */
  async #publishWithin(event: E): Promise<void> {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const err = outboxErrors.create("OUTBOX_PUBLISH_FAILED", {
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
