/**
 * The delivery worker's send window (WH-15, WH-21): the deliveries this process has claimed,
 * in the fair order they go out, and the sends in flight.
 *
 * - **Bounded.** It holds at most `maxQueued` deliveries (claimed, or being sent), no tenant
 *   more than all but a quarter of them, and at most `maxInFlight` sends at once, no tenant
 *   more than `maxInFlightPerTenant`: fair ORDER alone does not help a tenant when every slot
 *   is held by another tenant's slow requests, or the window is full of another tenant's
 *   backlog. The store stays the queue of record; the window only orders what was claimed.
 * - **Ordered** by the FairScheduler: DRR across tenants (weights from the last claim round),
 *   round robin across a tenant's endpoints, each endpoint with its concurrency and rate
 *   limits and its Retry-After throttle.
 * - **Pumped by events** while open: a claim round, a send that ends, and a timer set for the
 *   earliest parked endpoint start what may go. Closed (stopping, or driven by `runOnce`),
 *   nothing starts but through `drain(true)`.
 *
 * @example
 * const window = new SendWindow({ clock, maxQueued: 128, maxInFlight: 64, maxInFlightPerTenant: 48,
 *   weightOf: () => 1, limitsOf: () => DEFAULT_ENDPOINT_LIMITS, send: (lease) => deliver(lease.item),
 *   release: (claimed) => releaseLease(db, claimed, clock.nowMs()), onSlotFree: () => {}, log });
 * window.open();
 * await window.add(claimed); // in the fair order; sends start as slots free
 * window.close();
 * await window.drain();
 */
import type { Clock } from "@casebook/kit/clock";
import { type EndpointLimits, FairScheduler, type Lease } from "../domain/fair-scheduler.ts";
import type { WorkerMetrics } from "../metrics.ts";
import type { ClaimedDelivery } from "../store/delivery-claims.ts";

type Log = (obj: Record<string, unknown>, msg: string) => void;

export interface SendWindowOptions {
  clock: Clock;
  /** Deliveries held at once, claimed or being sent. */
  maxQueued: number;
  /** Sends at once. */
  maxInFlight: number;
  /** Sends at once for one tenant. */
  maxInFlightPerTenant: number;
  weightOf: (tenantId: string) => number;
  limitsOf: (endpointId: string) => EndpointLimits;
  /** One delivery, from its pick to its last write; must not throw. */
  send: (lease: Lease<ClaimedDelivery>) => Promise<void>;
  /** Gives a claim back to the store (the window refused it, or it was never sent). */
  release: (claimed: ClaimedDelivery) => Promise<void>;
  /** A send ended: the room it left may call for a claim. */
  onSlotFree: () => void;
  metrics?: WorkerMetrics;
  log: Log;
}

export class SendWindow {
  readonly #o: SendWindowOptions;
  /** A quarter of the window stays free of any one tenant. */
  readonly #maxQueuedPerTenant: number;
  #scheduler!: FairScheduler<ClaimedDelivery>;
  /** Claimed, not yet picked: released on stop. */
  readonly #unpicked = new Map<string, ClaimedDelivery>();
  /** Picked and not yet done (sending, or its writes). */
  readonly #sending = new Set<string>();
  readonly #inflight = new Set<Promise<void>>();
  #open = false;
  #readyTimer: ReturnType<typeof setTimeout> | undefined;
  /** The monotonic instant #readyTimer is set for. */
  #readyAtMs: number | undefined;

  constructor(o: SendWindowOptions) {
    this.#o = o;
    this.#maxQueuedPerTenant = Math.max(1, o.maxQueued - Math.floor(o.maxQueued / 4));
    this.#reset();
  }

  /** Sends start by themselves from now on: when one ends, and when a parked endpoint is ready. */
  open(): void {
    this.#open = true;
    this.#pump();
  }

  /** No send starts by itself any more (those in flight go on). */
  close(): void {
    this.#open = false;
    clearTimeout(this.#readyTimer);
    this.#readyTimer = undefined;
    this.#readyAtMs = undefined;
  }

  /** Claimed and not yet picked, and sends in flight. */
  get load(): { queued: number; inFlight: number } {
    return { queued: this.#unpicked.size, inFlight: this.#inflight.size };
  }

  /** Ids of every delivery the window holds (unpicked or being sent): leases this worker keeps. */
  held(): string[] {
    return [...this.#unpicked.keys(), ...this.#sending];
  }

  /** Free places in the window. */
  room(): number {
    const { queued, inFlight } = this.#scheduler.stats();
    return this.#o.maxQueued - queued - inFlight;
  }

  /** What `tenantId` may still claim: its share of the window is all but a quarter of it. */
  tenantRoom(tenantId: string): number {
    const held = this.#scheduler.tenantStats(tenantId);
    return this.#maxQueuedPerTenant - (held === undefined ? 0 : held.queued + held.inFlight);
  }

  /** Claim in batches (an eighth of the window) unless the window ran empty. */
  wantsClaim(): boolean {
    const room = this.room();
    const empty = this.#unpicked.size === 0 && this.#inflight.size === 0;
    return room > 0 && (empty || room >= Math.ceil(this.#o.maxQueued / 8));
  }

  /** Queues a claimed delivery in the fair order; one the window refuses goes back to the store. */
  async add(claimed: ClaimedDelivery): Promise<void> {
    try {
      this.#scheduler.enqueue({
        tenantId: claimed.tenantId,
        endpointId: claimed.subscriptionId,
        item: claimed,
      });
      this.#unpicked.set(claimed.deliveryId, claimed);
    } catch (err) {
      // The window is sized before claiming, so this is the endpoint bound: hand it back.
      this.#o.log({ err, deliveryId: claimed.deliveryId }, "delivery worker: window full; claim released");
      await this.#o.release(claimed);
    }
  }

  /** Holds an endpoint's sends until `untilMonotonicMs` (a Retry-After the lease can cover). */
  throttle(endpointId: string, untilMonotonicMs: number): void {
    this.#scheduler.throttle(endpointId, untilMonotonicMs);
  }

  /** While open, starts sends up to maxInFlight in the scheduler's order (after a claim round). */
  pump(): void {
    if (this.#open) this.#pump();
  }

  #pump(): void {
    while (this.#inflight.size < this.#o.maxInFlight) {
      const lease = this.#scheduler.pick();
      if (lease === undefined) break;
      this.#unpicked.delete(lease.item.deliveryId);
      this.#sending.add(lease.item.deliveryId);
      const running: Promise<void> = this.#o.send(lease).finally(() => {
        this.#sending.delete(lease.item.deliveryId);
        this.#scheduler.complete(lease);
        this.#inflight.delete(running);
        this.pump();
        this.#o.onSlotFree();
      });
      this.#inflight.add(running);
    }
    this.#o.metrics?.inFlight.set(this.#inflight.size);
    this.#o.metrics?.queued.set(this.#unpicked.size);
    if (this.#open) this.#armReadyTimer();
  }

  /** Waits for every send in flight; with `pump`, keeps starting sendable ones until none is left. */
  async drain(pump = false): Promise<void> {
    for (;;) {
      if (pump) this.#pump();
      if (this.#inflight.size === 0) return;
      await Promise.race(this.#inflight);
    }
  }

  /** Gives every claimed-but-unsent delivery back to the store, due at once, and empties the window. */
  async releaseUnpicked(): Promise<void> {
    for (const claimed of this.#unpicked.values()) {
      try {
        await this.#o.release(claimed);
      } catch (err) {
        this.#o.log(
          { err, deliveryId: claimed.deliveryId },
          "delivery worker: release failed; the lease will expire",
        );
      }
    }
    this.#reset();
  }

  /** A parked endpoint's time matters only when a slot is free to send to it. */
  #armReadyTimer(): void {
    const readyAt = this.#inflight.size < this.#o.maxInFlight ? this.#scheduler.nextReadyAtMs() : undefined;
    // Every pump lands here (a send ending, each claim): the timer set for this instant stays.
    if (readyAt === this.#readyAtMs && (readyAt === undefined || this.#readyTimer !== undefined)) return;
    clearTimeout(this.#readyTimer);
    this.#readyTimer = undefined;
    this.#readyAtMs = readyAt;
    if (readyAt === undefined) return;
    const waitMs = Math.max(0, readyAt - this.#o.clock.monotonicMs());
    this.#readyTimer = setTimeout(() => {
      this.#readyTimer = undefined;
      this.#readyAtMs = undefined;
      this.pump();
    }, waitMs);
  }

  #reset(): void {
    const o = this.#o;
    this.#scheduler = new FairScheduler<ClaimedDelivery>({
      clock: o.clock,
      maxQueuedTotal: o.maxQueued,
      maxQueuedPerTenant: this.#maxQueuedPerTenant,
      maxInFlightPerTenant: o.maxInFlightPerTenant,
      weightOf: o.weightOf,
      limitsOf: o.limitsOf,
    });
    this.#unpicked.clear();
  }
}
